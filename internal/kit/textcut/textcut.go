// Package textcut cuts text to a byte budget without splitting a
// character: every cut Airlock makes of text it shows or stores (an error
// in the trail, a fence attribute, a label's text, a result over the
// output limit) ends on a rune boundary, so what it keeps is still valid
// UTF-8 when the input was.
package textcut

import (
	"fmt"
	"unicode/utf8"
)

// Prefix is the longest prefix of s of at most limit bytes that ends on a
// rune boundary, and whether anything was cut.
func Prefix(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	cut := max(0, limit)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

// Marked is Prefix followed, when it cut, by a line saying how much of s
// it shows: what a reader of a cut result must be told.
func Marked(s string, limit int) (string, bool) {
	out, cut := Prefix(s, limit)
	switch {
	case !cut:
		return s, false
	case limit <= 0:
		return fmt.Sprintf("[output truncated: showing 0 of %d bytes]", len(s)), true
	}
	return out + fmt.Sprintf("\n[output truncated: showing %d of %d bytes]", len(out), len(s)), true
}
