package fence

import (
	"unicode/utf8"
)

// SanitizeStats counts what [Sanitize] changed, one field per rule of the
// table in doc.go. The zero value means the input was returned unchanged.
// It is comparable and small, for the audit record.
type SanitizeStats struct {
	Markers     int `json:"markers,omitempty"`      // marker-word look-alikes replaced by [MarkerReplacement]
	Escapes     int `json:"escapes,omitempty"`      // ANSI/VT escape sequences removed (7- and 8-bit)
	Controls    int `json:"controls,omitempty"`     // other C0/C1 controls and DEL removed
	LineBreaks  int `json:"line_breaks,omitempty"`  // CR, CRLF, U+2028 and U+2029 turned into \n
	Bidi        int `json:"bidi,omitempty"`         // bidi controls shown as [U+XXXX]
	Invisible   int `json:"invisible,omitempty"`    // zero-width, variation selectors, other invisible format characters removed
	Tags        int `json:"tags,omitempty"`         // Unicode tag characters removed
	InvalidUTF8 int `json:"invalid_utf8,omitempty"` // runs of invalid UTF-8 replaced by U+FFFD
	Notices     int `json:"notices,omitempty"`      // imitations of the "[Airlock" prefix replaced by [NoticeReplacement]
}

// MarkerReplacement is what a marker-word look-alike becomes. It holds no
// letter U, so it cannot start a marker word together with what follows.
const MarkerReplacement = "[fence marker removed]"

// NoticeReplacement is what an imitation of Airlock's own "[Airlock" prefix
// (the start of "[Airlock notice]") becomes: it still reads, but as content
// that imitated Airlock, and it cannot match again (a letter follows the
// bracket), so Sanitize stays idempotent.
const NoticeReplacement = "[imitation of Airlock"

// Sanitize returns s with every rule of the package's rule table applied,
// and counts of what it changed. It is one forward pass over s, linear in
// len(s), with a fast path that copies runs of plain ASCII. Sanitize is
// idempotent: Sanitize of its output returns it unchanged with zero stats
// (FuzzSanitize), which is how [Check] recognises sanitized content.
func Sanitize(s string) (string, SanitizeStats) {
	out, st := sanitize(make([]byte, 0, len(s)+len(s)/64+16), s)
	if st == (SanitizeStats{}) {
		return s, st
	}
	return string(out), st
}

// sanitizer is the state of one pass: the output, the stats, the marker
// and notice matchers and whether the last kept rune can carry a variation
// selector.
type sanitizer struct {
	out  []byte
	st   SanitizeStats
	m    matcher
	p    noticeMatcher
	base bool
}

// idle reports that no matcher has a live candidate, so the fast path may
// copy quiet bytes without feeding them.
func (z *sanitizer) idle() bool { return z.m.active == 0 && z.p.state == 0 }

// feed gives the matchers the symbol of the kept rune just appended at
// output offset pos. A completed marker word is cut from the output and
// replaced (TestSanitizeRules/marker_*), and so is a completed imitation of
// the "[Airlock" prefix (TestSanitizeRules/notice_*): content that opens a
// line with "[Airlock notice]" would otherwise pass for Airlock's own words
// inside the fence.
func (z *sanitizer) feed(sym class, pos int) {
	if z.m.active != 0 || sym == letter('U') { // only U can start a marker word
		if begin, ok := z.m.step(sym, pos); ok {
			z.out = append(z.out[:begin], MarkerReplacement...)
			z.st.Markers++
			z.base = true
			z.p.state = 0 // its start may lie in the cut text
			return
		}
	}
	if z.p.state != 0 || sym == symOpen { // only a bracket starts an imitation
		if begin, ok := z.p.step(sym, pos); ok {
			z.out = append(z.out[:begin], NoticeReplacement...)
			z.st.Notices++
			z.base = true
			z.m.active = 0
		}
	}
}

// visible appends [U+XXXX] for r. It is not fed to the matcher, so a bidi
// control between two letters of the marker word does not hide the word.
func (z *sanitizer) visible(r rune) {
	const hex = "0123456789ABCDEF"
	n := 4
	for r>>(4*n) != 0 {
		n++
	}
	z.out = append(z.out, "[U+"...)
	for k := n - 1; k >= 0; k-- {
		z.out = append(z.out, hex[(r>>(4*k))&0xF])
	}
	z.out = append(z.out, ']')
	z.base = true
}

// sanitize appends the sanitized s to dst.
func sanitize[T text](dst []byte, s T) ([]byte, SanitizeStats) {
	z := sanitizer{out: dst}
	tbl := bmpClass()
	for i := 0; i < len(s); {
		if z.idle() {
			if j := quietRun(s, i, tbl); j > i {
				z.out = append(z.out, s[i:j]...)
				z.base = s[j-1] >= ' '
				if i = j; i == len(s) {
					break
				}
			}
		}
		if b := s[i]; b < utf8.RuneSelf {
			if keep[b] { // printable, \t or \n, with a candidate live or one starting
				pos := len(z.out)
				z.out = append(z.out, b)
				z.base = b >= ' '
				z.feed(asciiClass[b], pos)
				i++
				continue
			}
			i = asciiStep(&z, s, i)
		} else {
			i = runeStep(&z, s, i, tbl)
		}
	}
	return z.out, z.st
}

// quietRun returns the end of the run of bytes from s[i] that the fast
// path copies verbatim with the matchers idle: printable ASCII but [, \t, \n, a U
// or u whose next byte is printable ASCII other than N or n (such a U starts
// a candidate that the next byte kills, so feeding it is a no-op), and
// valid non-ASCII runes no rule touches. It tests eight ASCII bytes at a
// time while it can.
func quietRun[T text](s T, i int, tbl *[0x10000]class) int {
	j := i
	for j < len(s) {
		if j+8 <= len(s) && quietWord(load64(s, j)) {
			j += 8
			continue
		}
		for end := min(j+8, len(s)); j < end; {
			c := s[j]
			if c >= utf8.RuneSelf {
				// A valid rune with no rule (most of the world's letters,
				// CJK, emoji) is copied as it is and resets the matcher,
				// which is idle anyway.
				r, n := decodeRune(s, j)
				if (r == utf8.RuneError && n == 1) || classOf(tbl, r) != clsPlain {
					return j
				}
				j += n
				continue
			}
			if !quiet[c] && (c|0x20 != 'u' || j+1 == len(s) || !afterU[s[j+1]]) {
				return j
			}
			j++
		}
	}
	return j
}

// load64 reads s[i:i+8] as a little-endian word (one load after the
// compiler combines it).
func load64[T text](s T, i int) uint64 {
	_ = s[i+7]
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// quietWord reports whether all eight bytes of w are printable ASCII other
// than U, u and [, eight bytes at a time (SWAR). \t and \n are left to the byte
// loop. Each test is the exact "has a byte less than n / equal to zero"
// idiom, valid because bytes >= 0x80 are ruled out first.
func quietWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	bad := w&highs |
		(w-0x20*ones)&^w&highs | // a byte < 0x20
		hasZero(w^0x7F*ones) | // DEL
		hasZero((w|0x20*ones)^'u'*ones) | // U or u
		hasZero(w^'['*ones) // [
	return bad == 0
}
