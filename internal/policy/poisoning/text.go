package poisoning

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxText bounds how much of one string the detectors read: a hostile
// upstream's megabyte description is flagged for its length and scanned
// only this far, so a review never costs more than a bounded amount.
const maxText = 64 << 10

// text is one string of a definition prepared for the detectors. The
// detectors match clean and plain, never raw, so an instruction split by
// zero-width characters, spelled with Cyrillic look-alikes or set in
// fullwidth or mathematical letters reads as the words it spells.
type text struct {
	field string // where it was found: "description", "inputSchema.properties.x.description", ...
	raw   string // as the upstream wrote it (cut at maxText)
	// clean is raw without the characters a reader cannot see, in NFKC
	// (fullwidth and mathematical letters become ASCII) with Cyrillic and
	// Greek look-alikes of Latin letters folded to Latin and every
	// non-ASCII space made an ASCII one.
	clean string
	// plain is clean lower-cased, without emphasis marks (*, `, ", curly
	// quotes), spaces and tabs collapsed; newlines are kept, since they
	// end a clause.
	plain string
	// Counts the hidden-content signals report.
	invisible  int // format, control, tag, private-use characters, stray variation selectors
	invisibleR rune
	mixed      []string // words mixing Latin with look-alike letters of another script
	styled     int      // fullwidth or mathematical letters (NFKC folds them)
}

// prepare builds a text. It never fails: every byte sequence has a
// clean form (invalid UTF-8 counts as invisible and is dropped).
func prepare(field, raw string) *text {
	if len(raw) > maxText {
		raw = strings.ToValidUTF8(raw[:maxText], "")
	}
	t := &text{field: field, raw: raw}
	var b strings.Builder
	b.Grow(len(raw))
	var prev rune
	for i := 0; i < len(raw); {
		r, n := utf8.DecodeRuneInString(raw[i:])
		next, _ := utf8.DecodeRuneInString(raw[i+n:])
		i += n
		switch {
		case r == utf8.RuneError && n <= 1:
			t.invisible++
			continue
		case r == '\n' || r == '\t' || r == ' ':
		case r == '\r':
			continue // a CR of CRLF is no content; a lone one is dropped too
		case r == '\u2028' || r == '\u2029':
			r = '\n'
		case unicode.Is(unicode.Zs, r):
			r = ' ' // no-break, ideographic, thin … spaces read as spaces
		case isStyled(r):
			t.styled++
		case invisibleRune(prev, r, next):
			t.invisible++
			if t.invisibleR == 0 {
				t.invisibleR = r
			}
			continue
		}
		b.WriteRune(r)
		prev = r
	}
	clean := norm.NFKC.String(b.String())
	clean, t.mixed = foldConfusables(clean)
	t.clean = clean
	t.plain = plainOf(clean)
	return t
}

// invisibleRune reports a character a reader of the description cannot
// see but a model reads: format characters (zero-width, bidi controls,
// tag characters, soft hyphen, byte-order mark, invisible operators),
// controls, private-use and unassigned code points, the blank fillers, and
// variation selectors other than an emoji's. A zero-width joiner between
// two non-ASCII characters (an emoji sequence, Indic and Arabic shaping)
// is left alone, as is a variation selector after a symbol (⚠️).
func invisibleRune(prev, r, next rune) bool {
	switch {
	case r == 0x200C || r == 0x200D:
		return prev < utf8.RuneSelf || next < utf8.RuneSelf
	case r == 0xFE0E || r == 0xFE0F:
		return !unicode.Is(unicode.So, prev) && !unicode.Is(unicode.Sm, prev) && !unicode.Is(unicode.Sk, prev) && prev < 0x2000
	case r >= 0xFE00 && r <= 0xFE0D, r >= 0xE0100 && r <= 0xE01EF:
		return true
	case r == 0x034F, r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, r == 0x2800:
		return true // combining grapheme joiner, Hangul fillers, blank braille
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Cc, r), unicode.Is(unicode.Co, r):
		return true
	}
	return !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z)
}

// isStyled: fullwidth Latin letters and digits, mathematical alphanumerics,
// enclosed and squared letters — letters dressed up so a word list written
// in ASCII misses them; NFKC turns them back.
func isStyled(r rune) bool {
	return (r >= 0xFF10 && r <= 0xFF5A) || (r >= 0x1D400 && r <= 0x1D7FF) || (r >= 0x24B6 && r <= 0x24E9) || (r >= 0x1F130 && r <= 0x1F189)
}

// confusables folds Cyrillic, Greek and Armenian letters that look like
// Latin ones (the usual homoglyph alphabet: "раураl" in Cyrillic reads
// "paypal").
var confusables = map[rune]rune{
	'а': 'a', 'в': 'b', 'е': 'e', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'с': 'c', 'т': 't', 'у': 'y', 'х': 'x',
	'і': 'i', 'ј': 'j', 'ѕ': 's', 'һ': 'h', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'ӏ': 'l', 'ѵ': 'v', 'ɑ': 'a',
	'А': 'A', 'В': 'B', 'Е': 'E', 'К': 'K', 'М': 'M', 'Н': 'H', 'О': 'O', 'Р': 'P', 'С': 'C', 'Т': 'T', 'Х': 'X', 'У': 'Y',
	'І': 'I', 'Ј': 'J', 'Ѕ': 'S', 'Ԁ': 'D', 'Ԛ': 'Q', 'Ԝ': 'W',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O', 'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X',
	'ο': 'o', 'α': 'a', 'ν': 'v', 'ι': 'i', 'ρ': 'p', 'υ': 'u', 'χ': 'x', 'κ': 'k',
	'օ': 'o', 'ս': 'u', 'ց': 'g', 'ո': 'n', 'հ': 'h', 'զ': 'q',
}

// foldConfusables folds look-alike letters in every word that mixes them
// with Latin letters, or that consists of them alone in a text that is
// otherwise Latin (a Russian or Greek description keeps its words). It
// returns the folded text and the words that were folded.
func foldConfusables(s string) (string, []string) {
	latin, other := 0, 0
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf && unicode.IsLetter(r):
			latin++
		case unicode.IsLetter(r):
			other++
		}
	}
	mostlyLatin := latin > 4*other
	var mixed []string
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j < len(s) {
			r, n := utf8.DecodeRuneInString(s[j:])
			if !unicode.IsLetter(r) {
				break
			}
			j += n
		}
		if j == i {
			_, n := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		word := s[i:j]
		i = j
		hasLatin, hasConf, allConf := false, false, true
		for _, r := range word {
			_, conf := confusables[r]
			hasLatin = hasLatin || (r < utf8.RuneSelf)
			hasConf = hasConf || conf
			allConf = allConf && (conf || r < utf8.RuneSelf)
		}
		if hasConf && allConf && (hasLatin || mostlyLatin) {
			mixed = append(mixed, word)
			for _, r := range word {
				if f, ok := confusables[r]; ok {
					r = f
				}
				b.WriteRune(r)
			}
			continue
		}
		b.WriteString(word)
	}
	return b.String(), mixed
}

// plainOf lower-cases s, drops emphasis marks and collapses spaces.
func plainOf(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	low := []rune(strings.ToLower(s))
	for i, r := range low {
		switch r {
		case '*', '`', '"', '\u201c', '\u201d':
			continue
		case '_':
			// _emphasis_ goes; snake_case stays.
			if i == 0 || i+1 == len(low) || !isWordRune(low[i-1]) || !isWordRune(low[i+1]) {
				continue
			}
		case '\u2018', '\u2019':
			r = '\''
		case '\u2014', '\u2013':
			r = '-'
		case ' ', '\t':
			if !space {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// words splits s into lower-case words of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// nameTokens splits an identifier into its lower-case words: snake,
// kebab and camel case ("getUserProfile", "get_user-profile").
func nameTokens(name string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, strings.ToLower(cur.String()))
			cur.Reset()
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
		case unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || (i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))):
			flush()
			cur.WriteRune(r)
		default:
			cur.WriteRune(r)
		}
	}
	flush()
	return out
}

// firstSentence is s up to its first sentence end (or 240 bytes).
func firstSentence(s string) string {
	end := len(s)
	for i, r := range s {
		if i > 240 {
			end = i
			break
		}
		if r == '\n' || ((r == '.' || r == '!' || r == '?') && (i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\n')) {
			end = i
			break
		}
	}
	return s[:end]
}

// singular trims an English plural's ending, enough to compare nouns.
func singular(w string) string {
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"), strings.HasSuffix(w, "xes"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && len(w) > 3:
		return w[:len(w)-1]
	}
	return w
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

// excerpt is a bounded, valid-UTF-8 cut of s around [start, end).
func excerpt(s string, start, end int) string {
	const room, most = 24, 160
	if start < 0 || end > len(s) || start > end {
		return ""
	}
	a, z := start-room, end+room
	if a < 0 {
		a = 0
	}
	if z > len(s) {
		z = len(s)
	}
	if z-a > most {
		z = a + most
	}
	for a > 0 && !utf8.RuneStart(s[a]) {
		a--
	}
	for z < len(s) && !utf8.RuneStart(s[z]) {
		z++
	}
	out := strings.TrimSpace(strings.ReplaceAll(s[a:z], "\n", " "))
	if a > 0 {
		out = "…" + out
	}
	if z < len(s) {
		out += "…"
	}
	return out
}
