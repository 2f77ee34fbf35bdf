package fence

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedCorpus adds the hostile corpus and a few dense one-liners.
func seedCorpus(f *testing.F, add func(string)) {
	files, _ := filepath.Glob(filepath.Join("testdata", "hostile", "*.txt"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		add(string(b))
	}
	for _, s := range []string{
		"", "U", "u\u200bn", "UNTRUSTED_EXTERNAL_CONTEN\x1b[mT", "UNTRUNTRUSTED_EXTERNAL_CONTENT",
		"\x1b]\x1b[\x1bP\u009d\u009b", "\r\r\n\r", "❤\uFE0F\uFE0F", "\xed\xa0\x80\xff", "\U000E0041\u202e",
		"ＵＮＴＲＵＳＴＥＤ ｅｘｔｅｒｎａｌ ＣＯＮＴＥＮＴ", "Un\u00adtrusted-External-Content",
	} {
		add(s)
	}
}

// FuzzWrap: for any input, the fence is intact (Check passes), the nonce
// appears exactly twice, and the content is clean by the independent
// oracles (no marker word, no forbidden rune, Sanitize fixed point).
func FuzzWrap(f *testing.F) {
	seedCorpus(f, func(s string) { f.Add([]byte(s), "https://example.com/x") })
	f.Fuzz(func(t *testing.T, content []byte, source string) {
		fz, err := Wrap(content, Meta{Source: "s" + source, Kind: "fuzz", Trust: source, AttributionID: source})
		if err != nil {
			t.Fatal(err)
		}
		assertFence(t, fz)
		if want, _ := Sanitize(string(content)); fz.Content != want {
			t.Fatalf("Content %+q differs from Sanitize %+q", fz.Content, want)
		}
	})
}

// FuzzSanitize: output is clean and a fixed point, the string and []byte
// paths agree, stats are zero exactly when nothing changed, and text with
// nothing to rewrite passes through untouched.
func FuzzSanitize(f *testing.F) {
	seedCorpus(f, func(s string) { f.Add(s) })
	f.Fuzz(func(t *testing.T, s string) {
		out, st := Sanitize(s)
		assertClean(t, out)
		if (st == SanitizeStats{}) != (out == s) {
			t.Fatalf("stats %+v but changed = %v", st, out != s)
		}
		if b, bst := sanitize(nil, []byte(s)); string(b) != out || bst != st {
			t.Fatalf("[]byte path %+q %+v, string path %+q %+v", b, bst, out, st)
		}
		plain := !hasMarkerNaive(s)
		for i := 0; i < len(s) && plain; i++ {
			plain = (s[i] >= 0x20 && s[i] < 0x7F) || s[i] == '\n' || s[i] == '\t'
		}
		if plain && out != s {
			t.Fatalf("plain ASCII %+q rewritten to %+q", s, out)
		}
	})
}

// FuzzCheck: Check never panics, and whatever it accepts really is a fence
// around clean content.
func FuzzCheck(f *testing.F) {
	seedCorpus(f, func(s string) {
		fz, _ := Wrap([]byte(s), Meta{Source: "s", Kind: "k"})
		f.Add(fz.Text)
		f.Add(s)
	})
	f.Fuzz(func(t *testing.T, s string) {
		if Check(s) != nil {
			return
		}
		i := strings.Index(s, openPrefix)
		nl := strings.IndexByte(s[i:], '\n')
		nonce := s[i+len(openPrefix) : i+len(openPrefix)+nonceLen]
		content := strings.TrimSuffix(s[i+nl+1:], "\n"+closePrefix+nonce+markerEnd)
		assertClean(t, content)
		assertClean(t, strings.TrimSuffix(s[:i], notice+"\n"))
		if strings.Contains(content, nonce) {
			t.Fatal("accepted a fence whose content holds the nonce")
		}
	})
}
