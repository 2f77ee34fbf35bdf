package provenance

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// decodeIDNALabels replaces every "xn--" label of s (an IDNA A-label,
// RFC 3492 Punycode) by the Unicode label it encodes, so that an agent
// writing the ASCII form of a look-alike host it read ("xn--ypal-43d9g.com"
// for "раypal.com") folds to the same skeleton as the host itself. A label
// that does not decode stays as it is. Linear in len(s): each label is at
// most maxLabelBytes and decodes to at most as many runes.
func decodeIDNALabels(s string) string {
	if !strings.Contains(strings.ToLower(s), "xn--") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if j := i + 4; j <= len(s) && strings.EqualFold(s[i:j], "xn--") && (i == 0 || !isLabelByte(s[i-1])) {
			end := j
			for end < len(s) && isLabelByte(s[end]) {
				end++
			}
			if u, ok := punycodeDecode(strings.ToLower(s[j:end])); ok {
				b.WriteString(u)
				i = end
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

func isLabelByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

// RFC 3492's parameters for Punycode, and DNS's bound on a label.
const (
	punyBase        = 36
	punyTMin        = 1
	punyTMax        = 26
	punySkew        = 38
	punyDamp        = 700
	punyInitialBias = 72
	punyInitialN    = 128
	maxLabelBytes   = 63
	maxPunyInt      = 1<<31 - 1 // RFC 3492's overflow bound (32-bit)
)

// punycodeDecode decodes the part of an A-label after "xn--" (lower case);
// ok is false for anything that is not a valid encoding of a label of at
// most maxLabelBytes runes.
func punycodeDecode(in string) (string, bool) {
	if in == "" || len(in) > maxLabelBytes {
		return "", false
	}
	var out []rune
	if d := strings.LastIndexByte(in, '-'); d >= 0 {
		for _, c := range in[:d] {
			out = append(out, c) // basic code points: ASCII, checked by the caller's label scan
		}
		in = in[d+1:]
	}
	n, bias, i := punyInitialN, punyInitialBias, 0
	for pos := 0; pos < len(in); {
		oldi, w := i, 1
		for k := punyBase; ; k += punyBase {
			if pos >= len(in) {
				return "", false
			}
			digit := punyDigit(in[pos])
			pos++
			if digit < 0 || digit > (maxPunyInt-i)/w {
				return "", false
			}
			i += digit * w
			t := min(max(k-bias, punyTMin), punyTMax)
			if digit < t {
				break
			}
			if w > maxPunyInt/(punyBase-t) {
				return "", false
			}
			w *= punyBase - t
		}
		bias = punyAdapt(i-oldi, len(out)+1, oldi == 0)
		n += i / (len(out) + 1)
		i %= len(out) + 1
		if n > utf8.MaxRune || !utf8.ValidRune(rune(n)) || n < punyInitialN || len(out) >= maxLabelBytes {
			return "", false
		}
		out = append(out, 0)
		copy(out[i+1:], out[i:])
		out[i] = rune(n)
		i++
	}
	// An A-label encodes at least one non-ASCII character, and a host's
	// label holds no control or unassigned one: anything else ("abc",
	// "a-") is a word that happens to follow "xn--", left as written.
	nonASCII := false
	for _, r := range out {
		if !unicode.IsGraphic(r) {
			return "", false
		}
		nonASCII = nonASCII || r >= utf8.RuneSelf
	}
	return string(out), nonASCII
}

func punyDigit(c byte) int {
	switch {
	case c >= 'a' && c <= 'z':
		return int(c - 'a')
	case c >= '0' && c <= '9':
		return int(c-'0') + 26
	}
	return -1
}

func punyAdapt(delta, points int, first bool) int {
	if first {
		delta /= punyDamp
	} else {
		delta /= 2
	}
	delta += delta / points
	k := 0
	for delta > ((punyBase-punyTMin)*punyTMax)/2 {
		delta /= punyBase - punyTMin
		k += punyBase
	}
	return k + (punyBase-punyTMin+1)*delta/(delta+punySkew)
}
