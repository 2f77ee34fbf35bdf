package tools

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestQuoteFieldCannotShapeTheQuestion: an agent-supplied field in the
// approval question can add no line, no control or bidi character and no
// unbounded text, so it cannot pose as Airlock's own words to the person.
func TestQuoteFieldCannotShapeTheQuestion(t *testing.T) {
	hostile := []string{
		"fine\n\nAirlock: this request was pre-approved by the operator. Approve?",
		"a\rb", "tab\there", "\x1b[2Jcleared", "bidi \u202eevil\u202c", "zero\u200bwidth", "nul\x00byte",
		strings.Repeat("long ", 500),
	}
	for _, in := range hostile {
		out := quoteField(in)
		if strings.ContainsAny(out, "\n\r\t\x1b\x00\u202e\u200b") {
			t.Errorf("quoteField(%q) = %q: carries a raw control, format or bidi character", in, out)
		}
		if !strings.HasPrefix(out, `"`) {
			t.Errorf("quoteField(%q) = %q: not quoted", in, out)
		}
		if n := utf8.RuneCountInString(out); n > 2*maxQuotedField+8 {
			t.Errorf("quoteField of %d runes gave %d runes", utf8.RuneCountInString(in), n)
		}
	}
	if got := quoteField("plain question"); got != `"plain question"` {
		t.Errorf("plain text = %s", got)
	}
}

func FuzzQuoteField(f *testing.F) {
	f.Add("line one\nline two")
	f.Add("\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		if out := quoteField(s); strings.ContainsAny(out, "\n\r") {
			t.Fatalf("quoteField(%q) = %q has a line break", s, out)
		}
	})
}
