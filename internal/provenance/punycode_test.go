package provenance

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPunycodeDecode: RFC 3492's sample strings (section 7.1, the labels
// that fit DNS) and short ones; the expected Unicode was read with
// golang.org/x/net/idna's Punycode profile, lower-cased as the decoder
// reads labels.
func TestPunycodeDecode(t *testing.T) {
	for label, want := range map[string]string{
		"xn--egbpdaj6bu4bxfgehfvwxn":                        "ليهمابتكلموشعربي؟",
		"xn--ihqwcrb4cv8a8dqg056pqjye":                      "他们为什么不说中文",
		"xn--Proprostnemluvesky-uyb24dma41a":                "pročprostěnemluvíčesky",
		"xn--4dbcagdahymbxekheh6e0a7fei0b":                  "למההםפשוטלאמדבריםעברית",
		"xn--i1baa7eci9glrd9b2ae1bj0hfcgg6iyaf8o0a1dig0cd":  "यहलोगहिन्दीक्योंनहींबोलसकतेहैं",
		"xn--n8jok5ay5dzabd5bym9f0cm5685rrjetr6pdxa":        "なぜみんな日本語を話してくれないのか",
		"xn--b1abfaaepdrnnbgefbadotcwatmq2g4l":              "почемужеонинеговорятпорусски",
		"xn--PorqunopuedensimplementehablarenEspaol-fmd56a": "porquénopuedensimplementehablarenespañol",
		"xn--3B-ww4c5e180e575a65lsy2b":                      "3年b組金八先生",
		"xn--MajiKoi5-783gue6qz075azm5e":                    "majiでkoiする5秒前",
		"xn--bcher-kva":                                     "bücher",
		"xn--ypal-43d9g":                                    "раypal",
	} {
		got, ok := punycodeDecode(strings.ToLower(label[4:]))
		if !ok || got != want {
			t.Errorf("%s: %q, %v; want %q", label, got, ok, want)
		}
	}
	for _, bad := range []string{"", "-", "a-", "99999999999", "abc!", strings.Repeat("a", 64), "a-zzzzzzzzzzzzzzzz"} {
		if got, ok := punycodeDecode(bad); ok {
			t.Errorf("%q decoded to %q", bad, got)
		}
	}
}

// TestDecodeIDNALabels: labels are decoded in place, anywhere in a text;
// what does not decode, or only looks like a label's end, stays.
func TestDecodeIDNALabels(t *testing.T) {
	for in, want := range map[string]string{
		"pay support@xn--ypal-43d9g.com now": "pay support@раypal.com now",
		"https://www.XN--BCHER-KVA.example/": "https://www.bücher.example/",
		"xn--abc!":                           "xn--abc!",
		"axn--bcher-kva":                     "axn--bcher-kva",
		"no labels here":                     "no labels here",
	} {
		if got := decodeIDNALabels(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}

func FuzzPunycodeDecode(f *testing.F) {
	for _, s := range []string{"bcher-kva", "ypal-43d9g", "egbpdaj6bu4bxfgehfvwxn", "", "-", "zzzzzzzzz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := punycodeDecode(s)
		if !ok {
			return
		}
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > maxLabelBytes {
			t.Fatalf("%q decoded to %q", s, got)
		}
		// A label alone in a text decodes the same.
		if strings.IndexFunc(s, func(r rune) bool { return r > 0x7f || !isLabelByte(byte(r)) || r >= 'A' && r <= 'Z' }) < 0 {
			if d := decodeIDNALabels("xn--" + s); d != got {
				t.Fatalf("xn--%s in a text decodes to %q, alone to %q", s, d, got)
			}
		}
	})
}
