package declarations_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/policy/redact"
)

func firstDiff(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

// FuzzStoredURLHoldsNoCredential: a comm.fetch URL that Validate accepts
// and Normalize stores — the form the declarations table keeps, the
// approver is shown and the fetcher requests — holds nothing the
// redactor would hide: redact.Query finds no credential in its query, and no
// parameter net/url's query parser reads from it is one SecretQueryParam
// names. What the audit would hash must not sit in the declarations table
// in clear (SECURITY.md: "a need carrying one is refused").
func FuzzStoredURLHoldsNoCredential(f *testing.F) {
	for _, s := range []string{
		"https://api.test/v1?q=go&page=2",
		"https://api.test/v1?access_tokens=abc",
		"https://api.test/?next=https://b.test/?tokens=abc",
		"https://api.test/?next=https%3A%2F%2Fb.test%2F%3Ftoken%3Dabc",
		"https://api.test/?a?tokens=abc",
		"https://api.test/?q=Bearer-abcdefgh",
		"https://api.test/?q=1;tokens=abc",
		"https://api.test/?to%6Bens=abc&%61uthor=x",
		"https://api.test/?author=ann&keyword=go&sort_key=date&code=py",
		"https://api.test/x#frag&tokens=abc",
	} {
		f.Add(s)
	}
	x := func(string) string { return "X" }
	f.Fuzz(func(t *testing.T, raw string) {
		n := validFetch()
		n.Parameters.URL = raw
		if n.Validate() != nil || n.Normalize() != nil {
			return
		}
		stored := n.Parameters.URL
		// Only the query counts: Query also hashes a "&name=value" it
		// meets in a path, which no server reads as a parameter.
		if red := redact.Query(stored, x); red != stored {
			if q := strings.IndexByte(stored, '?'); q >= 0 && firstDiff(red, stored) > q {
				t.Fatalf("accepted %q and stored %q, whose query the audit redacts to %q", raw, stored, red)
			}
		}
		u, err := url.Parse(stored)
		if err != nil {
			t.Fatalf("stored URL %q does not parse: %v", stored, err)
		}
		vals, _ := url.ParseQuery(u.RawQuery)
		for name, vs := range vals {
			for _, v := range vs {
				// Re-escaped: SecretQueryParam decodes what it is given.
				if redact.SecretQueryParam(url.QueryEscape(name), url.QueryEscape(v)) {
					t.Fatalf("accepted %q and stored %q: the origin reads credential parameter %q", raw, stored, name)
				}
			}
		}
		if strings.Contains(stored, "#") {
			t.Fatalf("stored %q keeps a fragment", stored)
		}
	})
}
