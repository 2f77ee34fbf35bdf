package fence

import "unicode/utf8"

// asciiStep handles the ASCII control at s[i] (anything but printable, \t
// and \n, which sanitize keeps itself) and returns the index of the next
// unread byte.
func asciiStep[T text](z *sanitizer, s T, i int) int {
	switch b := s[i]; {
	case b == '\r':
		// A lone CR sends a terminal's cursor back to column 0, so text after
		// it overprints what a reviewer saw while the model reads both; a
		// CR can also hide a line from line-based review. CRLF becomes LF
		// and a lone CR becomes LF, so every line is visible as a line
		// (TestSanitizeRules/cr_*).
		z.st.LineBreaks++
		if i+1 < len(s) && s[i+1] == '\n' {
			return i + 1
		}
		pos := len(z.out)
		z.out = append(z.out, '\n')
		z.base = false
		z.feed(clsPlain, pos)
		return i + 1
	case b == 0x1B:
		z.st.Escapes++
		return i + escLen(s, i)
	default:
		// NUL, backspace (overstrike: "a\bb" shows b), form feed, vertical
		// tab, DEL and the rest carry no text and can hide or overwrite text
		// on a terminal; they are removed (TestSanitizeRules/c0_*).
		z.st.Controls++
		return i + 1
	}
}

// runeStep handles the non-ASCII sequence at s[i] and returns the index of
// the next unread byte.
func runeStep[T text](z *sanitizer, s T, i int, tbl *[0x10000]class) int {
	r, size := decodeRune(s, i)
	if r == utf8.RuneError && size == 1 {
		// Invalid UTF-8 would reach the model as bytes it may decode some
		// other way; a run of invalid bytes becomes one U+FFFD
		// (TestSanitizeRules/invalid_*).
		j := i + 1
		for j < len(s) && s[j] >= utf8.RuneSelf {
			if r, n := decodeRune(s, j); r != utf8.RuneError || n != 1 {
				break
			}
			j++
		}
		z.st.InvalidUTF8++
		pos := len(z.out)
		z.out = utf8.AppendRune(z.out, utf8.RuneError)
		z.base = true
		z.feed(clsPlain, pos)
		return j
	}
	switch c := classOf(tbl, r); c {
	case clsBidi:
		z.st.Bidi++
		z.visible(r)
	case clsTag:
		// Tag characters spell ASCII invisibly (U+E0041 is a hidden "A"):
		// models read them, people do not (TestSanitizeRules/tags_*).
		z.st.Tags++
	case clsInvisible:
		// Zero-width and other default-ignorable characters split words
		// to dodge filters and the marker check, or carry hidden data.
		z.st.Invisible++
	case clsVS:
		// Emoji need one FE0E/FE0F after their base; runs of selectors are
		// the "emoji smuggling" channel for hidden bytes (TestSanitizeRules/vs_*).
		if z.base && (r == 0xFE0E || r == 0xFE0F) {
			z.out = append(z.out, s[i:i+size]...)
			z.base = false
		} else {
			z.st.Invisible++
		}
	case clsLineSep:
		z.st.LineBreaks++
		pos := len(z.out)
		z.out = append(z.out, '\n')
		z.base = false
		z.feed(clsPlain, pos)
	case clsC1:
		z.st.Controls++
	case clsC1CSI:
		z.st.Escapes++
		return i + size + csiLen(s, i+size)
	case clsC1String:
		z.st.Escapes++
		return i + size + stringLen(s, i+size)
	case clsMark:
		// Kept, not fed: the matchers see through a combining mark, so
		// "U\u0301NTRUSTED_…" is still the marker word
		// (TestSanitizeRules/marker_combining_*).
		z.out = append(z.out, s[i:i+size]...)
		z.base = true
	default: // plain, letter or separator: kept
		pos := len(z.out)
		z.out = append(z.out, s[i:i+size]...)
		z.base = true
		z.feed(c, pos)
	}
	return i + size
}

// decodeRune is utf8.DecodeRune for either input type.
func decodeRune[T text](s T, i int) (rune, int) {
	end := min(i+utf8.UTFMax, len(s))
	return utf8.DecodeRuneInString(string(s[i:end]))
}
