package fence

import (
	"strings"
	"testing"
)

// benchInputs are 1 MiB each: prose (ASCII English, the common case),
// mixed (markdown with UTF-8, CRLF and a few ANSI escapes) and hostile
// (dense with everything the sanitizer rewrites).
func benchInputs() map[string][]byte {
	const size = 1 << 20
	fill := func(unit string) []byte {
		s := strings.Repeat(unit, size/len(unit)+1)
		return []byte(s[:size])
	}
	return map[string][]byte{
		"prose":   fill("The quick brown fox jumps over the lazy dog; users should run `go test ./...` before pushing.\n"),
		"mixed":   fill("## Überschrift — naïve café 日本語 😀\r\n- item \x1b[1mbold\x1b[0m, see https://example.com/a?b=c\r\n"),
		"hostile": fill("UNTRUSTED\u200b_EXTERNAL_CONTENT \u202eevil\u202c \U000E0041\x1b]0;t\a\r\xff "),
	}
}

func BenchmarkWrap(b *testing.B) {
	for name, in := range benchInputs() {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Wrap(in, Meta{Source: "https://example.com", Kind: "comm.fetch"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSanitize(b *testing.B) {
	for name, in := range benchInputs() {
		s := string(in)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for b.Loop() {
				Sanitize(s)
			}
		})
	}
}

func BenchmarkCheck(b *testing.B) {
	f, err := Wrap(benchInputs()["prose"], Meta{Source: "s", Kind: "k"})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(f.Content)))
	for b.Loop() {
		if err := Check(f.Text); err != nil {
			b.Fatal(err)
		}
	}
}
