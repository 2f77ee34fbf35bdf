package fence

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The oracles below are deliberately written apart from the sanitizer's
// state machine: a rune-by-rune scan and a regular expression.

// forbiddenRune reports the first rune that must never leave Sanitize.
func forbiddenRune(s string) (rune, bool) {
	prev := rune(-1)
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return r, true // invalid UTF-8
			}
		}
		switch {
		case r < 0x20 && r != '\n' && r != '\t', r >= 0x7F && r <= 0x9F,
			r == 0x2028, r == 0x2029, r >= 0xE0000 && r <= 0xE0FFF,
			unicode.Is(unicode.Cf, r), unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
			return r, true
		case unicode.Is(unicode.Variation_Selector, r):
			if (r != 0xFE0E && r != 0xFE0F) || prev < 0 || prev == '\n' || prev == '\t' ||
				unicode.Is(unicode.Variation_Selector, prev) {
				return r, true
			}
		}
		prev = r
	}
	return 0, false
}

var markerRE = regexp.MustCompile(`UNTRUSTED_*EXTERNAL_*CONTENT|\[_*AIRLOCK`)

// hasMarkerNaive folds s (look-alike letters to A-Z, separators to _,
// brackets to [, variation selectors and combining marks dropped, anything
// else to #) and searches it for the marker word or the "[Airlock" prefix.
func hasMarkerNaive(s string) bool {
	var b strings.Builder
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Variation_Selector, r):
		case r == '[':
			b.WriteByte('[')
		case r >= 'a' && r <= 'z':
			b.WriteRune(r - 'a' + 'A')
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r)
		case strings.ContainsRune("_-. \t", r):
			b.WriteByte('_')
		case r >= 0x80:
			switch c := classify(r); {
			case c >= 1 && c <= 26:
				b.WriteByte('A' + byte(c) - 1)
			case c == symSep:
				b.WriteByte('_')
			case c == symOpen:
				b.WriteByte('[')
			case c == clsMark:
			default:
				b.WriteByte('#')
			}
		default:
			b.WriteByte('#')
		}
	}
	return markerRE.MatchString(b.String())
}
