package textcut

import (
	"testing"
	"unicode/utf8"
)

func TestPrefix(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		want  string
		cut   bool
	}{
		{"hello", 10, "hello", false},
		{"hello", 5, "hello", false},
		{"hello", 3, "hel", true},
		{"hello", 0, "", true},
		{"hello", -1, "", true},
		{"héllo", 2, "h", true},      // é is two bytes: never split
		{"日本", 4, "日", true},         // three-byte runes
		{"\U0001F600x", 3, "", true}, // a four-byte rune longer than the budget
	} {
		got, cut := Prefix(tc.in, tc.limit)
		if got != tc.want || cut != tc.cut {
			t.Errorf("Prefix(%q, %d) = %q, %v; want %q, %v", tc.in, tc.limit, got, cut, tc.want, tc.cut)
		}
	}
}

func TestMarked(t *testing.T) {
	for _, tc := range []struct {
		in    string
		limit int
		want  string
	}{
		{"short", 10, "short"},
		{"abcdef", 3, "abc\n[output truncated: showing 3 of 6 bytes]"},
		{"abcdef", 0, "[output truncated: showing 0 of 6 bytes]"},
		{"éa", 1, "\n[output truncated: showing 0 of 3 bytes]"},
	} {
		if got, _ := Marked(tc.in, tc.limit); got != tc.want {
			t.Errorf("Marked(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
		}
	}
}

func FuzzPrefix(f *testing.F) {
	f.Add("héllo wörld", 4)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		got, cut := Prefix(s, limit)
		if len(got) > max(0, limit) && cut {
			t.Fatalf("Prefix(%q, %d) = %q: over the budget", s, limit, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Prefix(%q, %d) = %q: split a character", s, limit, got)
		}
		if !cut && got != s {
			t.Fatalf("Prefix(%q, %d) = %q without cutting", s, limit, got)
		}
	})
}

func TestQuote(t *testing.T) {
	for _, c := range []struct {
		in        string
		n         int
		q, qASCII string
	}{
		{"plain", 10, `"plain"`, `"plain"`},
		{"line\nbreak", 64, `"line\nbreak"`, `"line\nbreak"`},
		{"évasion", 3, `"éva"…`, `"\u00e9va"…`},
		{"rtl\u202egnp", 64, `"rtl\u202egnp"`, `"rtl\u202egnp"`},
		{"abc", 0, `""…`, `""…`},
		{"", 5, `""`, `""`},
		// Printable to strconv, yet nothing shows (fuzz: FuzzArgOriginLine).
		{"a\u3164b\u034fc\ufe0fd\U000e0100", 64, `"a\u3164b\u034fc\ufe0fd\U000e0100"`, `"a\u3164b\u034fc\ufe0fd\U000e0100"`},
		{"é\xff\u3164", 64, `"é\xff\u3164"`, `"\u00e9\xff\u3164"`},
	} {
		if got := Quote(c.in, c.n); got != c.q {
			t.Errorf("Quote(%q, %d) = %s, want %s", c.in, c.n, got, c.q)
		}
		if got := QuoteASCII(c.in, c.n); got != c.qASCII {
			t.Errorf("QuoteASCII(%q, %d) = %s, want %s", c.in, c.n, got, c.qASCII)
		}
	}
}
