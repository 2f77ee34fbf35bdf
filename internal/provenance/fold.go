package provenance

import (
	"html"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Skeleton returns the look-alike fold of s, the form in which untrusted
// content is matched. Two strings a reader could take for the same text
// should have the same skeleton. Each step names the evasion it blocks:
//
//   - percent-decoding, repeated (%55S13…, %2555S13…: URL-encoded values)
//   - HTML character references (&#85;S13…, &amp;)
//   - IDNA A-labels decoded (xn--ypal-43d9g → раypal, then folded below)
//   - NFKD compatibility decomposition (fullwidth ＵＳ１３, mathematical
//     𝐔𝐒, circled, superscript, ligature ﬁ, Kelvin K, long s ſ)
//   - removal of combining marks (Ú → U; overlays like U+0335)
//   - removal of invisible and format characters (zero-width space and
//     joiners, soft hyphen, bidi controls, tag characters, variation
//     selectors, Hangul fillers, controls)
//   - confusables: Cyrillic, Greek, Armenian, Cherokee, small-capital
//     and other Latin look-alikes to ASCII letters; dashes, dots and
//     slashes to ASCII; non-ASCII decimal digits (Arabic-Indic ٣) to ASCII
//   - lower case
//   - defanging: hxxp → http, [.] (.) [dot] (dot) → ".", [at] (at) [@] → "@"
//
// The result is lower-case; it is not a displayable or dialable value.
// Skeleton is linear in len(s).
func Skeleton(s string) string {
	for range 2 {
		s = percentDecode(s)
		s = percentDecode(s)
		if strings.IndexByte(s, '&') >= 0 {
			s = html.UnescapeString(s)
		}
	}
	s = decodeIDNALabels(s)
	s = norm.NFKD.String(s)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(foldASCII(r))
			continue
		}
		if isInvisible(r) || unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc) {
			continue // zero-width and combining characters never separate or change a value
		}
		r = unicode.ToLower(r) // before the table: Ɩ lower-cases to the look-alike ɩ
		if c, ok := confusable[r]; ok {
			b.WriteRune(c)
			continue
		}
		if unicode.IsDigit(r) {
			b.WriteByte('0' + digitValue(r)) // Arabic-Indic, Devanagari … digits
			continue
		}
		if unicode.IsSpace(r) {
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	return defang.Replace(b.String())
}

func foldASCII(r rune) rune {
	switch {
	case r >= 'A' && r <= 'Z':
		return r + 'a' - 'A'
	case r == '\t', r == '\n', r == '\r', r == '\f', r == '\v':
		return ' '
	case r < 0x20 || r == 0x7f:
		return ' '
	}
	return r
}

// defang undoes the "defanged" spellings of addresses that threat reports
// and injected instructions use to smuggle an address past a matcher.
var defang = strings.NewReplacer(
	"hxxp", "http", "[.]", ".", "(.)", ".", "{.}", ".", "[dot]", ".", "(dot)", ".",
	"[at]", "@", "(at)", "@", "[@]", "@", "[:]", ":",
)

// strictFold is the exact comparison form: NFC and lower case, with runs
// of white space collapsed. Look-alikes stay distinct, so a Cyrillic
// "раypal.com" never equals a trusted "paypal.com".
func strictFold(s string) string {
	s = norm.NFC.String(strings.ToLower(s))
	return strings.Join(strings.Fields(s), " ")
}

// percentDecode decodes every valid %XX escape once (invalid ones stay).
func percentDecode(s string) string {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for ; i < len(s); i++ {
		c := s[i]
		if c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// isInvisible reports characters that render as nothing: format (Cf,
// which holds zero-width space, joiners, bidi controls, soft hyphen, BOM
// and tags), default-ignorables, variation selectors and controls.
func isInvisible(r rune) bool {
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) ||
		unicode.Is(unicode.Variation_Selector, r) || unicode.Is(unicode.Cc, r) && !unicode.IsSpace(r)
}

// digitValue is the value of a decimal digit rune: Unicode lays out each
// script's digits as a contiguous 0..9 run (several runs may be adjacent).
func digitValue(r rune) byte {
	start := r
	for start > 0 && r-start < 60 && unicode.IsDigit(start-1) {
		start--
	}
	return byte((r - start) % 10)
}
