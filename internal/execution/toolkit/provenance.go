package toolkit

import (
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/textcut"
)

// ArgOrigin is where one argument of a declared need came from (issue 22),
// as an approver is shown it: in `airlock approvals show`, in the question
// the client's person is asked and on the console's Approvals page. The
// value and the source names may be an attacker's text: [ArgOrigin.Line]
// quotes and cuts each, so no value can add a line to the question, hide
// characters or pose as Airlock's words.
type ArgOrigin struct {
	Name      string   // as a policy names it: "recipient", "items.0.iban"
	Value     string   // the value as traced (capped by the matcher)
	Origin    string   // trusted, endorsed, untrusted or agent
	Kind      string   // what the value looks like: iban, email, url, text, ...
	Sources   []string // the matched sources (attribution ids, "task", ...), bounded
	Truncated bool     // the value or the arguments were cut before tracing
}

// Bounds of one argument's line.
const (
	MaxShownValue   = 200 // runes of a value
	MaxShownSource  = 80  // runes of a source name
	MaxShownSources = 4
)

// Line renders a: name, quoted value, kind and where it came from, e.g.
//
//	recipient = "GB29NWBK60161331926819" (iban): UNTRUSTED, from content the agent read: "att_01…"
func (a ArgOrigin) Line() string {
	var b strings.Builder
	b.WriteString(textcut.Quote(a.Name, MaxShownSource))
	b.WriteString(" = ")
	if a.Kind == "text" || a.Kind == "word" {
		b.WriteString(textcut.Quote(a.Value, MaxShownValue))
	} else {
		// An identifier is shown in ASCII: a look-alike letter in an IBAN,
		// address or host reads as \u0430, not as the "a" it imitates.
		b.WriteString(textcut.QuoteASCII(a.Value, MaxShownValue))
	}
	if a.Kind != "" {
		b.WriteString(" (" + textcut.Quote(a.Kind, 32) + ")")
	}
	b.WriteString(": ")
	b.WriteString(a.Says())
	if len(a.Sources) > 0 {
		b.WriteString(": ")
		for i, s := range a.Sources {
			if i == MaxShownSources {
				b.WriteString(", …")
				break
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(textcut.Quote(s, MaxShownSource))
		}
	}
	if a.Truncated {
		b.WriteString(" (cut before tracing)")
	}
	return b.String()
}

// Says is what the origin means for the approver, in Airlock's words.
func (a ArgOrigin) Says() string {
	switch a.Origin {
	case "trusted":
		return "trusted, from the principal's input"
	case "endorsed":
		return "endorsed earlier in this context"
	case "untrusted":
		return "UNTRUSTED, from content the agent read"
	case "agent":
		return "the agent's own, found in nothing the context was given or has seen"
	}
	return "origin " + textcut.Quote(a.Origin, 16)
}
