package fence

// text is what the sanitizer reads: Wrap's []byte and Sanitize's string,
// without copying either.
type text interface{ ~string | ~[]byte }

// Terminal escape sequences (ECMA-48). They are removed whole: a terminal
// would act on them instead of showing them, so they can recolour, hide,
// retitle, hyperlink or erase text a person reviews while the model reads
// something else (TestSanitizeRules/ansi_*). Every parser below only moves
// forward, so each input byte is looked at a bounded number of times and a
// flood of introducers stays linear (TestHugeSingleLine).

// escLen returns the length of the escape sequence that starts with the ESC
// at s[i].
func escLen[T text](s T, i int) int {
	j := i + 1
	if j == len(s) {
		return 1 // lone ESC at the end
	}
	switch c := s[j]; {
	case c == '[': // CSI: colours, cursor movement, erase
		return 2 + csiLen(s, j+1)
	case c == ']' || c == 'P' || c == 'X' || c == '^' || c == '_': // OSC, DCS, SOS, PM, APC
		return 2 + stringLen(s, j+1)
	case c >= 0x20 && c <= 0x2F: // nF: charset designation and the like
		for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2F {
			j++
		}
		if j < len(s) && s[j] >= 0x30 && s[j] <= 0x7E {
			j++
		}
		return j - i
	case c >= 0x30 && c <= 0x7E: // Fp, Fe, Fs: two-byte sequences such as ESC c (reset)
		return 2
	}
	return 1 // ESC before anything else: drop the ESC, keep what follows
}

// csiLen returns the length of a control sequence's body starting at s[i]:
// parameter bytes, intermediate bytes, then one final byte. A malformed body
// ends at the first byte that does not fit; that byte is processed normally.
func csiLen[T text](s T, i int) int {
	j := i
	for j < len(s) && s[j] >= 0x30 && s[j] <= 0x3F {
		j++
	}
	for j < len(s) && s[j] >= 0x20 && s[j] <= 0x2F {
		j++
	}
	if j < len(s) && s[j] >= 0x40 && s[j] <= 0x7E {
		j++
	}
	return j - i
}

// stringLen returns the length of a control string's payload and terminator
// starting at s[i]. The string ends at BEL or ST (ESC \ or U+009C), which are
// removed with it, or just before CAN, SUB, another ESC or a newline, which
// are processed normally. An unterminated string therefore hides at most the
// rest of its line, never later lines (TestSanitizeRules/osc_unterminated).
func stringLen[T text](s T, i int) int {
	for j := i; j < len(s); j++ {
		switch s[j] {
		case 0x07:
			return j + 1 - i
		case 0x1B:
			if j+1 < len(s) && s[j+1] == '\\' {
				return j + 2 - i
			}
			return j - i
		case 0x18, 0x1A, '\n':
			return j - i
		case 0xC2: // U+009C (ST) in UTF-8
			if j+1 < len(s) && s[j+1] == 0x9C {
				return j + 2 - i
			}
		}
	}
	return len(s) - i
}
