package policy

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
)

// network is the compiled, effective network section of a policy (its own
// entries merged with its ancestors').
type network struct {
	allow   []hostPattern
	deny    []hostPattern
	schemes []string
	private []netip.Prefix
}

// hostPattern is "*" (any host), "*.suffix" (any subdomain of suffix, not
// suffix itself) or an exact host name or IP address.
type hostPattern struct {
	text   string
	any    bool
	suffix string // ".example.org" for "*.example.org"
	exact  string
}

var defaultSchemes = []string{"https"}

func parseHost(s string) (hostPattern, error) {
	if strings.TrimSpace(s) != s {
		return hostPattern{}, fmt.Errorf("%q has surrounding space", s)
	}
	h := normalHost(s)
	switch {
	case h == "*":
		return hostPattern{text: s, any: true}, nil
	case strings.HasPrefix(h, "*."):
		rest := h[2:]
		if err := checkHostName(rest); err != nil {
			return hostPattern{}, fmt.Errorf("%q: %w", s, err)
		}
		return hostPattern{text: s, suffix: "." + rest}, nil
	}
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		if a.Zone() != "" {
			return hostPattern{}, fmt.Errorf("%q: zoned addresses are not allowed", s)
		}
		return hostPattern{text: s, exact: a.Unmap().String()}, nil
	}
	if err := checkHostName(h); err != nil {
		return hostPattern{}, fmt.Errorf("%q: %w", s, err)
	}
	return hostPattern{text: s, exact: h}, nil
}

func checkHostName(h string) error {
	if h == "" || len(h) > 253 {
		return fmt.Errorf("host name empty or too long")
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return fmt.Errorf("empty or over-long label (only a leading \"*.\" wildcard is allowed)")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("character %q is not allowed in a host (only a leading \"*.\" wildcard is allowed)", c)
			}
		}
	}
	if numericHost(h) {
		return fmt.Errorf("looks like a numeric address but is not a canonical IP")
	}
	return nil
}

// numericHost reports names a resolver may read as an IPv4 address in a
// legacy form ("127.1", "2130706433", "0x7f.0.0.1"). No real top-level
// domain is all digits or hex-prefixed, so such a name can only be an
// attempt to reach an address while dodging the IP checks.
func numericHost(h string) bool {
	last := h[strings.LastIndexByte(h, '.')+1:]
	if strings.HasPrefix(last, "0x") {
		return true
	}
	for i := 0; i < len(last); i++ {
		if last[i] < '0' || last[i] > '9' {
			return false
		}
	}
	return true
}

func (h hostPattern) match(host string) bool {
	switch {
	case h.any:
		return host != ""
	case h.suffix != "":
		return len(host) > len(h.suffix) && strings.HasSuffix(host, h.suffix)
	}
	return host == h.exact
}

// covers reports whether every host q matches is matched by h.
func (h hostPattern) covers(q hostPattern) bool {
	switch {
	case h.any:
		return true
	case q.any:
		return false
	case h.suffix != "" && q.suffix != "":
		return q.suffix == h.suffix || strings.HasSuffix(q.suffix, h.suffix)
	case h.suffix != "":
		return h.match(q.exact)
	case q.suffix != "":
		return false
	}
	return h.exact == q.exact
}

func compileNetwork(s NetworkSpec, parent *network) (*network, error) {
	fail := func(field string, i int, err error) (*network, error) {
		return nil, &FieldError{Field: fmt.Sprintf(".network.%s[%d]", field, i), Err: err}
	}
	n := &network{schemes: defaultSchemes}
	if parent != nil {
		*n = *parent
		n.deny = slices.Clone(parent.deny)
	}
	if len(s.AllowHosts) > 0 {
		n.allow = nil
	}
	for i, t := range s.AllowHosts {
		h, err := parseHost(t)
		if err != nil {
			return fail("allow_hosts", i, fmt.Errorf("%w: %w", ErrInvalidNetwork, err))
		}
		if parent != nil && !slices.ContainsFunc(parent.allow, func(p hostPattern) bool { return p.covers(h) }) {
			return fail("allow_hosts", i, fmt.Errorf("%q is not within the parent's allow_hosts: %w", t, ErrWidens))
		}
		n.allow = append(n.allow, h)
	}
	for i, t := range s.DenyHosts {
		h, err := parseHost(t)
		if err != nil {
			return fail("deny_hosts", i, fmt.Errorf("%w: %w", ErrInvalidNetwork, err))
		}
		n.deny = append(n.deny, h)
	}
	if len(s.AllowSchemes) > 0 {
		n.schemes = nil
	}
	for i, sc := range s.AllowSchemes {
		if sc != strings.ToLower(sc) || sc == "" || strings.ContainsAny(sc, ":/ ") {
			return fail("allow_schemes", i, fmt.Errorf("%q: want a lower-case scheme such as https: %w", sc, ErrInvalidNetwork))
		}
		if parent != nil && !slices.Contains(parent.schemes, sc) {
			return fail("allow_schemes", i, fmt.Errorf("%q is not among the parent's schemes %v: %w", sc, parent.schemes, ErrWidens))
		}
		n.schemes = append(n.schemes, sc)
	}
	if len(s.AllowPrivate) > 0 {
		n.private = nil
	}
	for i, t := range s.AllowPrivate {
		pfx, err := netip.ParsePrefix(t)
		if err != nil {
			if a, aerr := netip.ParseAddr(t); aerr == nil {
				pfx = netip.PrefixFrom(a, a.BitLen())
			} else {
				return fail("allow_private", i, fmt.Errorf("%q: want a CIDR prefix such as 10.0.0.0/8: %w", t, ErrInvalidNetwork))
			}
		}
		pfx = pfx.Masked()
		if parent != nil && !slices.ContainsFunc(parent.private, func(p netip.Prefix) bool { return p.Bits() <= pfx.Bits() && p.Contains(pfx.Addr()) }) {
			return fail("allow_private", i, fmt.Errorf("%q is not within the parent's allow_private: %w", t, ErrWidens))
		}
		n.private = append(n.private, pfx)
	}
	return n, nil
}

// CheckURL reports whether the policy lets a comm.* capability reach u. The
// fetch executor must call it again for every redirect target, and should
// call CheckIP for the address it actually dials (a name can resolve to a
// private address). A refusal wraps ErrNetworkDenied. In order:
//
//   - the scheme must be in allow_schemes (default https only);
//   - user info ("https://user:pass@host") is refused: it leaks credentials
//     and is a classic way to make a URL read as a different host;
//   - the host must be present; legacy numeric forms such as "127.1" are
//     refused (resolvers disagree on them);
//   - a literal private, loopback, link-local or unspecified address, or
//     localhost, must be within allow_private;
//   - a host matching deny_hosts is refused even if allowed;
//   - the host must match allow_hosts (empty allow_hosts allows no host).
func (p *Policy) CheckURL(u *url.URL) error {
	if u == nil {
		return fmt.Errorf("no URL: %w", ErrNetworkDenied)
	}
	return p.net.check(u)
}

func (n *network) check(u *url.URL) error {
	scheme := strings.ToLower(u.Scheme)
	if !slices.Contains(n.schemes, scheme) {
		return fmt.Errorf("scheme %q is not in network.allow_schemes %v: %w", scheme, n.schemes, ErrNetworkDenied)
	}
	if u.User != nil {
		return fmt.Errorf("URLs carrying user info are refused: %w", ErrNetworkDenied)
	}
	host := normalHost(u.Hostname())
	if host == "" || u.Opaque != "" {
		return fmt.Errorf("URL has no host: %w", ErrNetworkDenied)
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if err := n.checkIP(a); err != nil {
			return err
		}
		host = a.Unmap().String()
	} else {
		if numericHost(host) {
			return fmt.Errorf("host %q is a non-canonical numeric address: %w", host, ErrNetworkDenied)
		}
		if host == "localhost" || strings.HasSuffix(host, ".localhost") {
			if err := n.checkIP(netip.AddrFrom4([4]byte{127, 0, 0, 1})); err != nil {
				return err
			}
		}
	}
	for _, d := range n.deny {
		if d.match(host) {
			return fmt.Errorf("host %q matches network.deny_hosts %q: %w", host, d.text, ErrNetworkDenied)
		}
	}
	for _, a := range n.allow {
		if a.match(host) {
			return nil
		}
	}
	if len(n.allow) == 0 {
		return fmt.Errorf("host %q: network.allow_hosts is empty, so no host may be reached: %w", host, ErrNetworkDenied)
	}
	return fmt.Errorf("host %q is not in network.allow_hosts: %w", host, ErrNetworkDenied)
}

// CheckIP reports whether the policy lets a connection reach addr. A fetch
// executor calls it from its dialer's Control hook with the address it is
// about to connect to, which closes the DNS-rebinding gap that a check of
// the URL's host name alone leaves open. Private, loopback, link-local,
// multicast and unspecified addresses (and IPv4-mapped forms of them) are
// refused unless within allow_private; an address listed in deny_hosts is
// refused.
func (p *Policy) CheckIP(addr netip.Addr) error { return p.net.checkIP(addr) }

func (n *network) checkIP(addr netip.Addr) error {
	a := addr.Unmap().WithZone("")
	if !a.IsValid() {
		return fmt.Errorf("invalid address: %w", ErrNetworkDenied)
	}
	if special(a) && !slices.ContainsFunc(n.private, func(p netip.Prefix) bool { return p.Contains(a) }) {
		return fmt.Errorf("address %s is private, loopback or link-local and not in network.allow_private: %w", a, ErrNetworkDenied)
	}
	s := a.String()
	for _, d := range n.deny {
		if d.exact == s {
			return fmt.Errorf("address %s is in network.deny_hosts: %w", a, ErrNetworkDenied)
		}
	}
	return nil
}

// cgnat is 100.64.0.0/10 (RFC 6598), which netip does not call private but
// which reaches inside a carrier or cloud network all the same.
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

func special(a netip.Addr) bool {
	return a.IsPrivate() || a.IsLoopback() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || cgnat.Contains(a)
}
