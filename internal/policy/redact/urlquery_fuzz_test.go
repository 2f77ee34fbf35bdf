package redact

import (
	"net/url"
	"strings"
	"testing"
)

// params splits a query or a fragment into its name=value pairs as a
// server (net/url's ParseQuery, the declaration validator's
// checkQueryCredentials) or a client reading an OAuth fragment
// ("#access_token=…&token_type=bearer", RFC 6749 §4.2.2) does: on '&',
// each at its first '='.
func params(s string) [][2]string {
	var out [][2]string
	for _, pair := range strings.Split(s, "&") {
		name, value, _ := strings.Cut(pair, "=")
		out = append(out, [2]string{name, value})
	}
	return out
}

// FuzzQueryLeavesNoCredential: in the audited form of a URL —
// Query(s, hash) — no parameter of its query or its fragment, read as a
// server or an OAuth client reads them (net/url's split: fragment at the
// first '#', query at the first '?' before it, pairs on '&'), still holds
// a value that SecretQueryParam — the very test the declaration validator
// refuses a need with — calls a credential. Whatever the name's spelling
// (case, percent-encoding, an empty or '?'-prefixed name), however often
// it is repeated, on whichever side of the '#'.
//
// s is one URL token: Query ends a value at white space, quotes and angle
// brackets by design (a URL quoted in an error text), so s holds none.
func FuzzQueryLeavesNoCredential(f *testing.F) {
	for _, s := range []string{
		"https://api.test/v1?access_token=abc123&q=go",
		"https://api.test/?q=go&API_KEY=k3y&api_key=k4y#frag",
		"https://api.test/?access%5Ftoken=abc&%61pi_key=x",
		"https://api.test/?q=Bearer%20abcdefgh",
		"https://api.test/?state=eyJhbGciOiJIUz.eyJzdWIiOiIx.sig",
		"https://a.test/?next=https://b.test/?token=abc",
		"https://a.test/?a?token=abc&b=1",
		"https://a.test/cb#state=xyz&token_type=bearer&access_token=ya29abc",
		"https://a.test/?q=1#f?sig=abc",
		"https://a.test/?q=1;token=abc",
		"https://a.test/?token=&token=abc&token",
		"https://a.test/?tok%65n=abc%zz&%zz=1",
		"https://a.test/?author=ann&keyword=go&sort_key=date",
	} {
		f.Add(s)
	}
	x := func(string) string { return "X" }
	f.Fuzz(func(t *testing.T, s string) {
		for i := 0; i < len(s); i++ {
			if endOfValue(s[i]) {
				return
			}
		}
		out := Query(s, x)
		rest, frag, _ := strings.Cut(out, "#")
		_, query, _ := strings.Cut(rest, "?")
		for part, list := range map[string]string{"query": query, "fragment": frag} {
			for _, p := range params(list) {
				name, value := p[0], p[1]
				if value == "" || value == "X" || !SecretQueryParam(name, value) {
					continue
				}
				dn, _ := url.QueryUnescape(name)
				t.Fatalf("the audited form %q of %q keeps the credential %q=%q (name read as %q) in its %s", out, s, name, value, dn, part)
			}
		}
	})
}
