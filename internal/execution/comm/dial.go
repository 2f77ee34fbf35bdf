package comm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// Resolver is the name lookup the fetcher's dialer uses. net.DefaultResolver
// satisfies it; tests inject one that lies.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// IPRules is optionally implemented by a [HostRules] (as *policy.Policy
// does). When present, its CheckIP is called from the dialer's Control hook
// with every address actually connected to, after this package's own
// address check, so a policy's deny_hosts entry for an IP applies even when
// a name resolves to it.
type IPRules interface {
	CheckIP(addr netip.Addr) error
}

// blockedV4 are IPv4 ranges no fetch may reach unless AllowPrivate says so.
// Each one is somewhere an attacker-chosen URL should not be able to take a
// server: this host, the local network, a cloud metadata service, the
// carrier's network, or an address with no business receiving a request.
var blockedV4 = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"; 0.0.0.0 reaches localhost on Linux
	netip.MustParsePrefix("10.0.0.0/8"),      // RFC 1918
	netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT, RFC 6598: inside the carrier or cloud
	netip.MustParsePrefix("127.0.0.0/8"),     // loopback
	netip.MustParsePrefix("169.254.0.0/16"),  // link-local, incl. 169.254.169.254 metadata
	netip.MustParsePrefix("172.16.0.0/12"),   // RFC 1918
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments (incl. 192.0.0.192 Oracle metadata)
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("192.88.99.0/24"),  // deprecated 6to4 relay anycast
	netip.MustParsePrefix("192.168.0.0/16"),  // RFC 1918
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("224.0.0.0/4"),     // multicast
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, incl. 255.255.255.255 broadcast
}

// blockedV6 are IPv6 ranges refused outright. IPv4-mapped addresses are
// unmapped and judged as IPv4; NAT64 and 6to4 addresses are judged by the
// IPv4 address they embed (see embeddedV4).
var blockedV6 = []netip.Prefix{
	netip.MustParsePrefix("::/96"),          // unspecified, loopback and deprecated IPv4-compatible
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64, RFC 8215
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2001::/32"),      // Teredo: a tunnel that can carry us anywhere
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
	netip.MustParsePrefix("fc00::/7"),       // unique local (ULA)
	netip.MustParsePrefix("fe80::/10"),      // link-local
	netip.MustParsePrefix("fec0::/10"),      // deprecated site-local
	netip.MustParsePrefix("ff00::/8"),       // multicast
}

var (
	nat64WKP  = netip.MustParsePrefix("64:ff9b::/96") // RFC 6052 well-known prefix
	sixToFour = netip.MustParsePrefix("2002::/16")    // 6to4, RFC 3056
)

// embeddedV4 returns the IPv4 address a NAT64 (64:ff9b::/96) or 6to4
// (2002::/16) address stands for: "64:ff9b::a9fe:a9fe" reaches
// 169.254.169.254 through a NAT64 gateway.
func embeddedV4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case nat64WKP.Contains(a):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// blockedAddr reports whether a is an address a fetch must not reach by
// default. It is pure so that TestBlockedAddr can cover every range without
// opening a socket.
func blockedAddr(a netip.Addr) bool {
	a = a.WithZone("").Unmap()
	if !a.IsValid() {
		return true
	}
	if a.Is4() {
		return slices.ContainsFunc(blockedV4, func(p netip.Prefix) bool { return p.Contains(a) })
	}
	if v4, ok := embeddedV4(a); ok {
		return blockedAddr(v4)
	}
	return slices.ContainsFunc(blockedV6, func(p netip.Prefix) bool { return p.Contains(a) })
}

// guard decides, at connect time, whether an address may be dialled.
type guard struct {
	allow []netip.Prefix
	rules IPRules // may be nil
}

// check is the address rule: allowed if inside AllowPrivate, refused if
// blockedAddr, then (if the host rules can) checked against the policy.
func (g *guard) check(a netip.Addr) error {
	a = a.WithZone("").Unmap()
	if blockedAddr(a) && !slices.ContainsFunc(g.allow, func(p netip.Prefix) bool { return p.Contains(a) }) {
		return newErr("fetch", ErrPrivateAddress, "", fmt.Errorf("refusing to connect to %s", a))
	}
	if g.rules != nil {
		if err := g.rules.CheckIP(a); err != nil {
			return newErr("fetch", ErrHostDenied, "", fmt.Errorf("address %s: %w", a, err))
		}
	}
	return nil
}

// control is the net.Dialer Control hook: it runs after the socket is
// created and before connect(2), with the literal address being connected
// to. Checking here rather than after a DNS lookup is what defeats DNS
// rebinding (a name that answers a public address to the check and a
// private one to the connect): whatever the resolver said, this sees the
// address the kernel is about to use. TestFetchRebinding and
// TestControlRefuses prove it.
func (g *guard) control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		// Fail closed: an address we cannot read is an address we do not dial.
		return newErr("fetch", ErrPrivateAddress, "", fmt.Errorf("unparseable dial address %q on %s", address, network))
	}
	return g.check(ap.Addr())
}

// dialer resolves names itself through the configured Resolver and dials
// the resulting IPs one by one; every connect passes guard.control.
type dialer struct {
	resolver Resolver
	guard    *guard
	net      net.Dialer
}

func newDialer(r Resolver, g *guard) *dialer {
	d := &dialer{resolver: r, guard: g}
	d.net = net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second, Control: g.control}
	return d
}

// maxAddrs bounds how many of a name's addresses one dial tries.
const maxAddrs = 4

func (d *dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	lookup := map[string]string{"tcp": "ip", "tcp4": "ip4", "tcp6": "ip6"}[network]
	if lookup == "" {
		return nil, fmt.Errorf("network %q not supported", network)
	}
	host, portStr, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("bad port %q", portStr)
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = d.resolver.LookupNetIP(ctx, lookup, host)
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
		}
	}
	var firstErr, refused error
	for i, a := range addrs {
		if i == maxAddrs {
			break
		}
		// The address is passed to the dialer as a literal, so net.Dialer
		// does no lookup of its own; Control sees exactly this address.
		c, err := d.net.DialContext(ctx, network, netip.AddrPortFrom(a.Unmap(), uint16(port)).String())
		if err == nil {
			return c, nil
		}
		var e *Error
		if refused == nil && errors.As(err, &e) {
			refused = err
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	// A refusal by the guard is the more important story to tell: a
	// name with one private and one unreachable address was an attempt.
	if refused != nil {
		return nil, refused
	}
	return nil, firstErr
}

// CheckedDialer returns comm.fetch's connect-time checked dialer for other
// callers that open connections for untrusted code (the egress proxy of
// sandboxed upstreams): res resolves names (nil: net.DefaultResolver),
// every address actually connected to passes the private-address check
// (allowPrivate lifts it for its prefixes) and rules (may be nil).
func CheckedDialer(allowPrivate []netip.Prefix, rules IPRules, res Resolver) func(ctx context.Context, network, address string) (net.Conn, error) {
	g := &guard{rules: rules}
	for _, p := range allowPrivate {
		if p.IsValid() {
			g.allow = append(g.allow, p.Masked())
		}
	}
	if res == nil {
		res = net.DefaultResolver
	}
	return newDialer(res, g).DialContext
}
