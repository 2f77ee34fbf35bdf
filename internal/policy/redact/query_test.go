package redact

import (
	"strings"
	"testing"
)

func TestQuery(t *testing.T) {
	x := func(string) string { return "X" }
	tests := []struct{ name, in, want string }{
		{"access token", "https://api.test/v1?access_token=abc123&q=go", "https://api.test/v1?access_token=X&q=go"},
		{"api key after another param", "https://api.test/?q=go&api_key=k3y#frag", "https://api.test/?q=go&api_key=X#frag"},
		{"encoded name", "https://api.test/?access%5Ftoken=abc", "https://api.test/?access%5Ftoken=X"},
		{"upper case", "https://api.test/?API_KEY=abc", "https://api.test/?API_KEY=X"},
		{"suffix", "https://api.test/?github_token=abc&csrftoken=d", "https://api.test/?github_token=X&csrftoken=X"},
		{"presigned", "https://b.s3.test/o?X-Amz-Credential=AK%2F1&X-Amz-Signature=f00", "https://b.s3.test/o?X-Amz-Credential=X&X-Amz-Signature=X"},
		{"secret by value", "https://api.test/?q=Bearer%20abcdefgh", "https://api.test/?q=X"},
		{"jwt by value", "https://api.test/?state=eyJhbGciOiJIUz.eyJzdWIiOiIx.sig", "https://api.test/?state=X"},
		{"inside an error text", `Get "https://api.test/?token=abc": dial tcp: refused`, `Get "https://api.test/?token=X": dial tcp: refused`},
		{"nested URL", "https://a.test/?next=https://b.test/?token=abc", "https://a.test/?next=https://b.test/?token=X"},
		{"not a credential", "https://a.test/?author=ann&keyword=go&sort_key=date&code=py", "https://a.test/?author=ann&keyword=go&sort_key=date&code=py"},
		{"empty value", "https://a.test/?token=&q=1", "https://a.test/?token=&q=1"},
		{"no query", "plain text & more = less", "plain text & more = less"},
		// FuzzQueryLeavesNoCredential's three classes, each kept in clear
		// before: a fragment's first parameter, a parameter without a name
		// (judged by its value), a '#' inside a fragment's value.
		{"fragment token", "https://app.test/cb#access_token=s3cr3t&state=1", "https://app.test/cb#access_token=X&state=1"},
		{"no name", "https://api.test/?=Bearer%20abcdefgh", "https://api.test/?=X"},
		{"hash in a fragment value", "https://app.test/#x&token=#s3cr3t", "https://app.test/#x&token=X"},
		{"two URLs, the fragment ends at the space", "https://a.test/#frag https://b.test/?q=1#token=t0k", "https://a.test/#frag https://b.test/?q=1#token=X"},
		{"semicolon separator", "https://api.test/?q=1;token=abc", "https://api.test/?q=1;token=X"},
		{"path parameter", "https://api.test/a;session=abc/b?q=1", "https://api.test/a;session=X"},
		{"secret holding a semicolon", "https://api.test/?token=ab;cd&q=1", "https://api.test/?token=X&q=1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Query(tc.in, x); got != tc.want {
				t.Fatalf("Query(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// TestJSONRedactsQuery: the audit's argument redaction hashes a secret
// query value inside any string and keeps the rest of the URL readable.
func TestJSONRedactsQuery(t *testing.T) {
	r := New(key)
	out := string(r.JSON([]byte(`{"parameters":{"url":"https://api.test/v1?q=go&access_token=s3cr3t-v4lue"}}`)))
	if strings.Contains(out, "s3cr3t-v4lue") || !strings.Contains(out, "access_token="+Prefix) || !strings.Contains(out, "q=go") {
		t.Fatalf("got %s", out)
	}
	got := r.Strings(map[string]any{"source": "https://b.test/?sig=abc", "n": 3.0, "hops": []string{"https://c.test/?token=t0k"}})
	m := got.(map[string]any)
	if m["source"] != "https://b.test/?sig="+r.Hash("abc") || m["hops"].([]string)[0] != "https://c.test/?token="+r.Hash("t0k") || m["n"] != 3.0 {
		t.Fatalf("Strings: %v", got)
	}
}

// FuzzQuery: Query never panics, is idempotent with a constant
// replacement, and leaves text without a credential parameter unchanged.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{
		"https://api.test/?access_token=abc&q=1", "?token=", "&&==??", "https://a/?next=https://b/?sig=x#y",
		`"https://a/?api_key=k" and ?password=p`, "https://a/?q=Bearer%20abcdefg", "?%zz=1&key=%",
	} {
		f.Add(s)
	}
	x := func(string) string { return "X" }
	f.Fuzz(func(t *testing.T, s string) {
		once := Query(s, x)
		if twice := Query(once, x); twice != once {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, once, twice)
		}
		if once != s && len(once) > len(s)+len("X")*strings.Count(s, "=") {
			t.Fatalf("grew beyond its replacements: %q -> %q", s, once)
		}
	})
}
