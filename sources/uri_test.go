package sources

import "testing"

func TestFileURIRoundTrip(t *testing.T) {
	for _, c := range []struct{ pool, path string }{
		{"alpha", "hello.txt"}, {"web-notes", "2026/competitor notes.md"}, {"p", "a%b/#c?d"}, {"run-1", "ünï/ø.txt"},
	} {
		uri := FileURI(c.pool, c.path)
		pool, path, ok := ParseFileURI(uri)
		if !ok || pool != c.pool || path != c.path {
			t.Errorf("%q → %q → %q %q %v", c.path, uri, pool, path, ok)
		}
	}
	for _, bad := range []string{"file:///etc/passwd", "airlock://other/a/b", "airlock://pool/a", "airlock://pool//b", "airlock://pool/a/b?x=1", "%"} {
		if _, _, ok := ParseFileURI(bad); ok {
			t.Errorf("ParseFileURI(%q) accepted", bad)
		}
	}
}

func FuzzParseFileURI(f *testing.F) {
	f.Add("airlock://pool/alpha/hello.txt")
	f.Add("airlock://pool/a/../b")
	f.Fuzz(func(t *testing.T, uri string) {
		pool, path, ok := ParseFileURI(uri)
		if !ok {
			return
		}
		// What parses names the same file when written back.
		if p2, q2, ok2 := ParseFileURI(FileURI(pool, path)); !ok2 || p2 != pool || q2 != path {
			t.Fatalf("%q → %q %q does not round-trip", uri, pool, path)
		}
	})
}
