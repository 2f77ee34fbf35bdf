package fence

import (
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// class is what the sanitizer does with one rune. Values 1..26 are the
// letters A..Z (after folding) and symSep a separator: both are kept and fed
// to the marker matcher. The rest name a rule of the table in doc.go.
type class uint8

const (
	clsPlain     class = 0  // kept, resets the matcher
	symSep       class = 27 // kept; may repeat between the marker's words
	clsBidi      class = 28 // shown as [U+XXXX]
	clsTag       class = 29 // removed (Unicode tag characters)
	clsVS        class = 30 // variation selector: one FE0E/FE0F after a base is kept, the rest removed
	clsInvisible class = 31 // removed (zero-width, other default-ignorable format characters)
	clsLineSep   class = 32 // U+2028 / U+2029 become \n
	clsC1        class = 33 // removed (C1 control)
	clsC1CSI     class = 34 // U+009B: 8-bit CSI, parsed and removed like ESC [
	clsC1String  class = 35 // U+0090/0098/009D/009E/009F: 8-bit DCS/SOS/OSC/PM/APC, removed with their payload
	clsMark      class = 36 // combining mark: kept, but invisible to both matchers
	symOpen      class = 37 // '[' or a look-alike: kept; starts the notice-prefix matcher
)

func letter(c byte) class { return class(c-'A') + 1 }

// classify is the definition of every non-ASCII rule. The sanitizer calls it
// directly only above the BMP; BMP runes go through the table built from it.
func classify(r rune) class {
	switch {
	case r < 0x80:
		return asciiClass[r] // callers use the ASCII tables directly; kept total for safety
	case r <= 0x9F:
		switch r {
		case 0x9B:
			return clsC1CSI
		case 0x90, 0x98, 0x9D, 0x9E, 0x9F:
			return clsC1String
		}
		return clsC1
	case isBidi(r):
		return clsBidi
	case r >= 0xE0000 && r <= 0xE007F:
		return clsTag
	case unicode.Is(unicode.Variation_Selector, r):
		return clsVS
	case r == 0x2028 || r == 0x2029:
		return clsLineSep
	case unicode.Is(unicode.Cf, r), unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r):
		return clsInvisible
	}
	if c := foldLetter(r); c != 0 {
		return letter(c)
	}
	if isSep(r) {
		return symSep
	}
	if isOpenBracket(r) {
		return symOpen
	}
	if unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc) {
		// A combining mark draws on the letter before it, so "U\u0301NTRUSTED…"
		// still reads as the marker word. Marks are kept (accents are text)
		// but not fed to the matchers, so they cannot split a word
		// (TestSanitizeRules/marker_combining_*).
		return clsMark
	}
	return clsPlain
}

// isOpenBracket reports '[' and the brackets a model may read as one, which
// can open an imitation of Airlock's own "[Airlock notice]" prefix.
// Best-effort, like the letter folding.
func isOpenBracket(r rune) bool {
	switch r {
	case '[', 0xFF3B, 0xFE47, 0x2045, 0x27E6, 0x3010, 0x3014, 0x3016, 0x3018, 0x301A,
		0x298B, 0x298D, 0x298F, 0x2772, 0xFE5D, 0x301D:
		return true
	}
	return false
}

// isBidi reports the bidirectional formatting characters ("Trojan Source",
// CVE-2021-42574): embeddings and overrides U+202A–202E, isolates
// U+2066–2069, and the implicit marks LRM, RLM and ALM.
func isBidi(r rune) bool {
	return (r >= 0x202A && r <= 0x202E) || (r >= 0x2066 && r <= 0x2069) ||
		r == 0x200E || r == 0x200F || r == 0x061C
}

// confusable maps look-alike letters a model may read as Latin to the
// letter they imitate. Only the letters of the marker word matter; this is a
// best-effort list (see "Limits" in doc.go), not Unicode's full confusables.
var confusable = map[rune]byte{
	0x017F: 'S', // ſ long s (case-folds to s)
	0x212A: 'K', // Kelvin sign
	// Cyrillic
	0x0410: 'A', 0x0430: 'A', 0x0415: 'E', 0x0435: 'E', 0x0421: 'C', 0x0441: 'C',
	0x041E: 'O', 0x043E: 'O', 0x0422: 'T', 0x0442: 'T', 0x0425: 'X', 0x0445: 'X',
	0x0405: 'S', 0x0455: 'S', 0x0500: 'D', 0x0501: 'D', 0x04C0: 'L', 0x0406: 'L',
	// Greek
	0x0391: 'A', 0x0395: 'E', 0x039D: 'N', 0x039F: 'O', 0x03BF: 'O', 0x03A4: 'T',
	0x03A7: 'X', 0x03C7: 'X',
	// Latin small capitals
	0x1D1C: 'U', 0x0274: 'N', 0x1D1B: 'T', 0x0280: 'R', 0xA731: 'S', 0x1D07: 'E',
	0x1D05: 'D', 0x1D00: 'A', 0x029F: 'L', 0x1D04: 'C', 0x1D0F: 'O',
	// Armenian
	0x054D: 'U', 0x0578: 'N', 0x0585: 'O',
}

// foldLetter returns the ASCII capital r stands for, or 0. It folds
// fullwidth forms, mathematical alphanumerics, enclosed and regional
// indicator letters (all NFKC- or visually equivalent) and [confusable].
func foldLetter(r rune) byte {
	type span struct {
		lo, hi rune
		base   byte
	}
	spans := [...]span{
		{0xFF21, 0xFF3A, 'A'}, {0xFF41, 0xFF5A, 'A'}, // fullwidth
		{0x24B6, 0x24CF, 'A'}, {0x24D0, 0x24E9, 'A'}, {0x249C, 0x24B5, 'A'}, // circled, parenthesized
		{0x1F110, 0x1F129, 'A'}, {0x1F130, 0x1F149, 'A'}, {0x1F150, 0x1F169, 'A'}, {0x1F170, 0x1F189, 'A'},
		{0x1F1E6, 0x1F1FF, 'A'}, // regional indicators
	}
	for _, s := range spans {
		if r >= s.lo && r <= s.hi {
			return s.base + byte(r-s.lo)
		}
	}
	if r >= 0x1D400 && r <= 0x1D6A3 { // mathematical alphanumerics: 52-letter blocks A..Z a..z
		return 'A' + byte((r-0x1D400)%52%26)
	}
	if c, ok := confusable[r]; ok {
		return c
	}
	return decomposedLetter(r)
}

// decomposedLetter folds a precomposed letter to its base: Ú, Ǔ, Ṳ and
// superscript or modifier forms (ᵁ) read as U to a model. It takes the
// compatibility decomposition (NFKD) and accepts exactly one base letter
// (ASCII or a [confusable]) followed only by combining marks. Only the BMP
// holds such letters outside the ranges foldLetter already covers.
func decomposedLetter(r rune) byte {
	if r < 0x80 || r >= 0x10000 {
		return 0
	}
	var buf [utf8.UTFMax]byte
	src := buf[:utf8.EncodeRune(buf[:], r)]
	if norm.NFKD.IsNormal(src) {
		return 0 // nothing to decompose
	}
	d := norm.NFKD.Bytes(src)
	base, n := utf8.DecodeRune(d)
	for _, m := range string(d[n:]) {
		if !unicode.In(m, unicode.Mn, unicode.Me, unicode.Mc) {
			return 0
		}
	}
	switch {
	case base >= 'A' && base <= 'Z':
		return byte(base)
	case base >= 'a' && base <= 'z':
		return byte(base) - 'a' + 'A'
	}
	return confusable[base]
}

// isSep reports the characters that may stand between the marker's words:
// spaces of every kind, hyphens, dashes and low lines (ASCII ones are in
// asciiClass).
func isSep(r rune) bool {
	switch {
	case unicode.Is(unicode.Zs, r):
		return true
	case r >= 0x2010 && r <= 0x2017, r == 0x2212, r == 0x203F, r == 0x2E3A, r == 0x2E3B:
		return true
	case r == 0xFE4D, r == 0xFE4E, r == 0xFE4F, r == 0xFE58, r == 0xFE63, r == 0xFF0D, r == 0xFF0E, r == 0xFF3F:
		return true
	}
	return false
}

// bmpClass is classify precomputed for every rune below U+10000, so the hot
// loop pays one table load per rune. Built on first use (64 KiB).
var bmpClass = sync.OnceValue(func() *[0x10000]class {
	t := new([0x10000]class)
	for r := rune(0x80); r < 0x10000; r++ {
		t[r] = classify(r)
	}
	return t
})

// classOf is classify with the BMP table and a cheap exit for the emoji and
// pictograph planes, which hold nothing the rules touch.
func classOf(t *[0x10000]class, r rune) class {
	if r < 0x10000 {
		return t[r]
	}
	if (r >= 0x1F200 && r < 0xE0000) || (r >= 0x1F18A && r < 0x1F1E6) {
		return clsPlain
	}
	return classify(r)
}

// ASCII tables. asciiClass gives each byte its matcher symbol; quiet marks the
// bytes that are copied verbatim and cannot start a marker or a notice
// imitation (everything printable except U, u and [, plus \t and \n), which
// is the fast path; keep marks every byte kept as it is (printable, \t, \n).
// afterU marks the bytes after which a U cannot be part of a marker word.
var asciiClass, quiet, keep, afterU = func() (cls [128]class, q, k, u [256]bool) {
	for b := 0; b < 128; b++ {
		switch {
		case b >= 'A' && b <= 'Z':
			cls[b] = letter(byte(b))
		case b >= 'a' && b <= 'z':
			cls[b] = letter(byte(b) - 'a' + 'A')
		case b == '_' || b == '-' || b == '.' || b == ' ' || b == '\t':
			cls[b] = symSep
		case b == '[':
			cls[b] = symOpen
		}
		k[b] = (b >= 0x20 && b < 0x7F) || b == '\t' || b == '\n'
		q[b] = k[b] && b != 'U' && b != 'u' && b != '['
		u[b] = (b >= 0x20 && b < 0x7F && b != 'N' && b != 'n') || b == '\t' || b == '\n'
	}
	return cls, q, k, u
}()
