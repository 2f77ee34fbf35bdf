package policy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/kit/urlnorm"
)

// dialPolicies are judged against the host Go's HTTP client really dials.
// The first is an allow-list with exceptions; the second allows every
// host but a deny list and a url.host rule (the shape "everything but
// pastebin" policies take).
var dialPolicies = func() []*Policy {
	var ps []*Policy
	for _, s := range []Spec{
		{
			Allow:   []string{"comm.fetch"},
			Network: NetworkSpec{AllowHosts: []string{"*.example.org", "api.test"}, DenyHosts: []string{"deny.example.org", "*.bad.example.org"}, AllowSchemes: []string{"https", "http"}},
			Rules:   []RuleSpec{{ID: "gated", Capability: "comm.fetch", When: `url.host == "gated.example.org"`, Effect: Deny}},
		},
		{
			Allow:   []string{"comm.fetch"},
			Network: NetworkSpec{AllowHosts: []string{"*"}, DenyHosts: []string{"pastebin.com", "*.evil.test"}, AllowSchemes: []string{"https", "http"}},
			Rules:   []RuleSpec{{ID: "gated", Capability: "comm.fetch", When: `url.host == "gated.example.org"`, Effect: Deny}},
		},
	} {
		p, err := Compile(s)
		if err != nil {
			panic(err)
		}
		ps = append(ps, p)
	}
	return ps
}()

// dialOracle is an independent reading of dialPolicies[i]: which host
// names (as dialled: lower case, no trailing dot) it lets a fetch reach.
func dialOracle(i int, host string) bool {
	sub := func(h, d string) bool { return strings.HasSuffix(h, "."+d) }
	if host == "gated.example.org" {
		return false
	}
	if i == 0 {
		if host == "deny.example.org" || sub(host, "bad.example.org") {
			return false
		}
		return sub(host, "example.org") || host == "api.test"
	}
	return host != "" && host != "pastebin.com" && !sub(host, "evil.test")
}

// dialTargets are the hosts the spelling mode rewrites: the denied and
// gated names of dialPolicies, and an allowed one.
var dialTargets = []string{"deny.example.org", "pastebin.com", "gated.example.org", "x.bad.example.org", "a.evil.test", "docs.example.org"}

// spell writes host with one spelling per byte of how: as is, upper
// case, full-width (U+FF01..U+FF5E), full-width percent-encoded, or with
// a soft hyphen before it; a dot may also become an ideographic,
// full-width or half-width full stop. All of these are one host to IDNA's
// lookup mapping (UTS #46), which net/http applies before it dials.
func spell(host string, how []byte) string {
	var b strings.Builder
	for i := 0; i < len(host); i++ {
		c := host[i]
		k := byte(0)
		if i < len(how) {
			k = how[i] % 8
		}
		switch {
		case c == '.' && k >= 5:
			b.WriteString([]string{"\u3002", "\uff0e", "\uff61"}[k-5])
		case k == 1:
			b.WriteString(strings.ToUpper(string(c)))
		case k == 2:
			b.WriteRune(rune(c) + 0xFEE0)
		case k == 3:
			for _, x := range []byte(string(rune(c) + 0xFEE0)) {
				b.WriteString("%" + strings.ToUpper(hex2(x)))
			}
		case k == 4:
			b.WriteString("%C2%AD")
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func hex2(x byte) string {
	const h = "0123456789abcdef"
	return string([]byte{h[x>>4], h[x&15]})
}

// dialledHost is the host name net/http's Transport dials for u (no
// proxy), as it would: the real transport with a dialer that only
// records its address.
func dialledHost(u *url.URL) (string, bool) {
	var addr string
	tr := &http.Transport{Proxy: nil, DialContext: func(_ context.Context, _, a string) (net.Conn, error) {
		addr = a
		return nil, errors.New("recorded")
	}}
	defer tr.CloseIdleConnections()
	req := &http.Request{Method: http.MethodGet, URL: u, Header: http.Header{}, Host: u.Host}
	if resp, err := tr.RoundTrip(req); err == nil {
		resp.Body.Close()
	}
	if addr == "" {
		return "", false
	}
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", false
	}
	return strings.TrimSuffix(strings.ToLower(h), "."), true
}

// FuzzNetworkJudgesDialledHost: a URL the policy allows for comm.fetch —
// its full decision (network section and rules, on urlnorm's normal form,
// as a redirect hop is judged) and CheckURL on that form (the fetcher's
// host rules) — is one whose host, as net/http resolves it before it
// dials, the policy allows: not in deny_hosts, not the host a url.host
// rule denies, within allow_hosts. A spelling the policy reads as another
// host than the one dialled is a way past deny_hosts.
//
// mode 0 fuzzes raw freely; otherwise raw's first byte picks one of
// dialTargets, the rest spell it (see spell), and path is appended.
func FuzzNetworkJudgesDialledHost(f *testing.F) {
	f.Add(uint8(0), "https://docs.example.org/x", "")
	f.Add(uint8(0), "https://DOCS.example.org./x?q=1", "")
	f.Add(uint8(0), "https://deny.example.org/", "")
	f.Add(uint8(0), "https://caf%C3%A9.example.org/", "")
	f.Add(uint8(0), "https://\u00e9.example.org/", "")
	f.Add(uint8(0), "https://[::ffff:1.2.3.4]/", "")
	f.Add(uint8(0), "http://api.test:8080/a/../b", "")
	f.Add(uint8(1), "\x00\x00\x00\x00\x00", "/p")
	f.Add(uint8(1), "\x05\x01\x01\x01\x01\x01", "/p?x=1")
	f.Add(uint8(1), "\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", "")
	f.Add(uint8(1), "\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00", "/")
	f.Fuzz(func(t *testing.T, mode uint8, raw, path string) {
		if mode%2 == 1 && raw != "" {
			host := dialTargets[int(raw[0])%len(dialTargets)]
			raw = "https://" + spell(host, []byte(raw[1:])) + "/" + strings.TrimPrefix(path, "/")
		}
		if len(raw) > 4096 || !utf8.ValidString(raw) {
			return
		}
		norm, err := urlnorm.Normalize(raw)
		if err != nil {
			return
		}
		u, err := url.Parse(norm)
		if err != nil {
			t.Fatalf("normal form %q does not parse: %v", norm, err)
		}
		for i, p := range dialPolicies {
			d := p.Decide(&Input{Capability: "comm.fetch", Args: map[string]any{"url": raw}})
			if d.Effect != Allow || p.CheckURL(u) != nil {
				continue
			}
			host, ok := dialledHost(u)
			if !ok {
				continue // nothing dialled: no host reached
			}
			if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
				host = a.Unmap().WithZone("").String()
			}
			if !dialOracle(i, host) {
				t.Fatalf("policy %d allows %q (normal form %q, host %q judged as %q), but net/http dials %q, which the policy denies",
					i, raw, norm, u.Hostname(), normalHost(u.Hostname()), host)
			}
		}
	})
}
