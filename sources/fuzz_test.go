package sources

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// FuzzParseManifest: never panics; whatever parses writes back to text that
// parses to the same entries, all with canonical names.
func FuzzParseManifest(f *testing.F) {
	for _, s := range []string{
		hA + "  a.txt\n",
		hA + " *./b/c\n\n",
		`\` + hA + `  we\\ird\nname\r` + "\n",
		hA + "  a\r\n",
		hA + "  ../x\n",
		hA + "  a\n" + hA + "  a\n",
		strings.ToUpper(hB) + "  %2e%2e\n",
		"",
		"\\",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(bytes.NewReader(data))
		if err != nil {
			return
		}
		for _, e := range m.Entries() {
			if err := checkManifestName(e.Path); err != nil {
				t.Fatalf("parsed a bad name %q: %v", e.Path, err)
			}
		}
		var buf bytes.Buffer
		if _, err := m.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		m2, err := ParseManifest(&buf)
		if err != nil {
			t.Fatalf("re-parse of WriteTo output: %v\n%q", err, buf.String())
		}
		if !slices.Equal(m.Entries(), m2.Entries()) {
			t.Fatalf("round trip changed entries:\n%+v\n%+v", m.Entries(), m2.Entries())
		}
	})
}

// FuzzPath reads arbitrary names from the hostile pool: never a panic, never
// the secret, every refusal a *violation.Error, the same answer twice.
func FuzzPath(f *testing.F) {
	for _, p := range hostilePaths {
		f.Add(p.path, int64(0), int64(0))
	}
	f.Add("sub/b.txt", int64(1), int64(1))
	f.Add("okdir/../rel", int64(0), int64(3))
	h := newHostile(f, &Options{MaxAccessLog: 16})
	c := h.bind(f)
	f.Fuzz(func(t *testing.T, name string, offset, limit int64) {
		res, err := c.Read("docs", name, offset, limit)
		res2, err2 := c.Read("docs", name, offset, limit)
		if codeOf(err) != codeOf(err2) {
			t.Fatalf("Read(%q) not deterministic: %v then %v", name, err, err2)
		}
		if err != nil {
			if codeOf(err) == "not-a-violation" {
				t.Fatalf("Read(%q): untyped error %v", name, err)
			}
			if res != nil {
				t.Fatalf("Read(%q): data with an error", name)
			}
			return
		}
		if bytes.Contains(res.Data, []byte(secretMarker[:8])) {
			t.Fatalf("Read(%q) returned outside data %q", name, res.Data)
		}
		if _, listed := c.bound["docs"].manifest.Lookup(name); !listed || checkName(name) != nil {
			t.Fatalf("Read(%q) succeeded for an unlisted or bad name", name)
		}
		if !bytes.Equal(res.Data, res2.Data) {
			t.Fatalf("Read(%q) returned different data", name)
		}
	})
}
