package urlnorm

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"already normal", "https://example.org/a/b?x=1", "https://example.org/a/b?x=1"},
		{"empty path", "https://example.org", "https://example.org/"},
		{"case of scheme and host", "HTTPS://Example.ORG/A", "https://example.org/A"},
		{"an internationalised host as its A-label", "https://XN--Mnchen-3ya.example/", "https://xn--mnchen-3ya.example/"},
		{"default https port", "https://example.org:443/a", "https://example.org/a"},
		{"default http port", "http://example.org:80/a", "http://example.org/a"},
		{"other port kept", "http://127.0.0.1:8080/a", "http://127.0.0.1:8080/a"},
		{"empty port", "https://example.org:/a", "https://example.org/a"},
		{"fragment dropped", "https://example.org/a#top", "https://example.org/a"},
		{"empty query dropped", "https://example.org/a?", "https://example.org/a"},
		// Issue 10 item 1: each of these read as not /gated/ to a path rule.
		{"dot-dot", "https://example.org/x/../gated/secret.txt", "https://example.org/gated/secret.txt"},
		{"doubled slash", "https://example.org//gated/secret.txt", "https://example.org/gated/secret.txt"},
		{"many slashes", "https://example.org///gated////secret.txt", "https://example.org/gated/secret.txt"},
		{"dot", "https://example.org/./gated/./secret.txt", "https://example.org/gated/secret.txt"},
		{"encoded dot-dot", "https://example.org/x/%2e%2E/gated/secret.txt", "https://example.org/gated/secret.txt"},
		{"encoded unreserved", "https://example.org/%67ated/%7Euser", "https://example.org/gated/~user"},
		{"dot-dot above the root", "https://example.org/../../gated", "https://example.org/gated"},
		{"trailing dot-dot", "https://example.org/a/b/..", "https://example.org/a/"},
		{"trailing slash kept", "https://example.org/a/", "https://example.org/a/"},
		{"lower-case escape upper-cased", "https://example.org/a%2fb?q=%3d", "https://example.org/a%2Fb?q=%3D"},
		{"encoded slash inside a segment", "https://gitlab.example/api/projects/group%2Fproject", "https://gitlab.example/api/projects/group%2Fproject"},
		{"space and quotes encoded", `https://example.org/a b"c?d e`, "https://example.org/a%20b%22c?d%20e"},
		{"brackets in path encoded", "https://example.org/a[b]", "https://example.org/a%5Bb%5D"},
		{"non-ASCII encoded", "https://example.org/caf\u00e9", "https://example.org/caf%C3%A9"},
		{"query keeps order and slashes", "https://example.org/?b=2&a=1/..&c=?", "https://example.org/?b=2&a=1/..&c=?"},
		{"query unreserved decoded", "https://example.org/?access%5Ftoken=1", "https://example.org/?access_token=1"},
		{"IPv6 literal", "http://[::1]:8080/a/../b", "http://[::1]:8080/b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Normalize(tc.in)
			if err != nil || got != tc.want {
				t.Fatalf("Normalize(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
			if again, err := Normalize(got); err != nil || again != got {
				t.Fatalf("not idempotent: %q -> %q, %v", got, again, err)
			}
		})
	}
}

func TestNormalizeRefuses(t *testing.T) {
	tests := []struct{ name, in string }{
		{"relative", "/gated/secret.txt"},
		{"opaque", "mailto:a@example.org"},
		{"no host", "https:///gated"},
		{"user info", "https://user:pw@example.org/"},
		{"does not parse", "https://exa mple.org/"},
		{"bad escape in path", "https://example.org/%zz"},
		{"bad escape in query", "https://example.org/?q=%zz"},
		{"truncated escape in query", "https://example.org/?q=%2"},
		// Decoding would reveal what normalisation removes at the escaped
		// level, to a server that decodes before it resolves.
		{"dot-dot behind an encoded slash", "https://example.org/x/..%2Fgated/secret.txt"},
		{"doubled slash behind an encoding", "https://example.org/%2Fgated/secret.txt"},
		{"encoded backslash", "https://example.org/x/..%5Cgated/secret.txt"},
		{"Tomcat path parameter", "https://example.org/x/..;/gated/secret.txt"},
		{"dot with a parameter", "https://example.org/.;x/gated"},
		{"only a port", "https://:443/"},
		// net/http maps these through IDNA to deny.example.org before it
		// dials: judged as written, they would pass a deny_hosts entry.
		{"full-width host", "https://\uff44eny.example.org/"},
		{"full-width host, escaped", "https://%EF%BD%84eny.example.org/"},
		{"escaped ASCII host", "https://%64eny.example.org/"},
		{"ideographic full stop", "https://deny\u3002example.org/"},
		{"soft hyphen in the host", "https://de%C2%ADny.example.org/"},
		{"Unicode host", "https://m\u00fcnchen.example/"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Normalize(tc.in)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Normalize(%q) = %q, %v; want ErrInvalid", tc.in, got, err)
			}
			// The message may reach the agent: it never repeats the input.
			if strings.Contains(err.Error(), tc.in) {
				t.Fatalf("error repeats the input: %v", err)
			}
		})
	}
}

// FuzzNormalize: the normal form is a fixed point, parses back to itself
// (so the fetcher, which sends url.Parse(n).String(), sends exactly what
// the policy judged), and its decoded path has no dot or empty segment.
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"https://example.org/x/../gated/secret.txt", "https://example.org//gated/secret.txt",
		"https://example.org/x/%2e%2e/gated", "https://example.org/x/..%2Fgated", "http://[::1]:80/a?b=%41#c",
		"https://Example.org:443/a/./b/../c/?q=1&access_token=x", "https://example.org/caf\u00e9?\u00e9=1",
		"https://h/%", "https://h/a;b/..;/c", "HTTP://h:/", "https://h/?%zz", "https://[fe80::1%25en0]/",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		n, err := Normalize(raw)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error does not wrap ErrInvalid: %v", err)
			}
			return
		}
		again, err := Normalize(n)
		if err != nil || again != n {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", raw, n, again, err)
		}
		u, err := url.Parse(n)
		if err != nil || u.String() != n {
			t.Fatalf("normal form %q does not parse back to itself: %v", n, err)
		}
		if u.Fragment != "" || u.User != nil {
			t.Fatalf("normal form %q keeps a fragment or user info", n)
		}
		segs := strings.Split(u.Path, "/")
		for i, s := range segs[1:] {
			if s == "." || s == ".." || s == "" && i < len(segs)-2 {
				t.Fatalf("normal form %q: decoded path %q keeps a dot or empty segment", n, u.Path)
			}
		}
	})
}

func ExampleNormalize() {
	for _, raw := range []string{
		"https://Docs.Example.org:443/x/../gated//report.txt#intro",
		"https://docs.example.org/x/..%2Fgated/report.txt",
	} {
		n, err := Normalize(raw)
		fmt.Println(n, err)
	}
	// Output:
	// https://docs.example.org/gated/report.txt <nil>
	//  the path holds a dot segment once decoded: URL cannot be normalised
}
