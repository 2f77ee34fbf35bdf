// Package textcut cuts text to a byte budget without splitting a
// character: every cut Airlock makes of text it shows or stores (an error
// in the trail, a fence attribute, a label's text, a result over the
// output limit, a name quoted in a refusal) ends on a rune boundary, so
// what it keeps is still valid UTF-8 when the input was.
package textcut

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
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

// Runes is the prefix of s of at most n runes, and whether anything was
// cut; it reads no further than the cut, however long s is.
func Runes(s string, n int) (string, bool) {
	i := 0
	for range max(0, n) {
		if i >= len(s) {
			return s, false
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i], i < len(s)
}

// Quote is s cut to at most n runes and Go-quoted, "…" after the quote
// marking a cut: newlines, control, format and bidi characters show as
// escapes (invisible ones too), so the value cannot add a line or hide
// text where a person reads it.
func Quote(s string, n int) string {
	cut, more := Runes(s, n)
	return marked(quote(cut), more)
}

// quote is strconv.Quote with the characters it counts as printable but
// nobody sees escaped too: the default-ignorable letters and marks (U+3164
// HANGUL FILLER, U+115F, U+FFA0, U+034F, U+17B4 …) and the variation
// selectors, which showed as blanks in an approval line and could hide a
// difference between two values that look the same.
func quote(s string) string {
	if strings.IndexFunc(s, unseen) < 0 {
		return strconv.Quote(s)
	}
	b := []byte{'"'}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if unseen(r) {
			if r > 0xFFFF {
				b = fmt.Appendf(b, `\U%08x`, r)
			} else {
				b = fmt.Appendf(b, `\u%04x`, r)
			}
		} else {
			q := strconv.Quote(s[i : i+size])
			b = append(b, q[1:len(q)-1]...)
		}
		i += size
	}
	return string(append(b, '"'))
}

// unseen: a character strconv prints as it is but that shows nothing.
func unseen(r rune) bool {
	return unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Variation_Selector, r)
}

// QuoteASCII is Quote with every non-ASCII rune escaped too: for text an
// agent or an upstream chose, so no bidirectional or invisible character
// reaches the reader.
func QuoteASCII(s string, n int) string {
	cut, more := Runes(s, n)
	return marked(strconv.QuoteToASCII(cut), more)
}

func marked(q string, more bool) string {
	if more {
		return q + "…"
	}
	return q
}
