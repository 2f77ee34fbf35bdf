package pinning

import (
	"github.com/airlock-dev/airlock/internal/policy/poisoning"
)

// Flag is one finding of the review as a pin keeps it: the field it was
// found in, what was seen (Reason), and (since issue 25) the signal —
// poisoning.Signal.Explain says why it matters —, its weight and an
// excerpt. Pins stored before then hold Field and Reason only.
type Flag struct {
	Field   string  `json:"field"` // "description", "inputSchema.properties.x.description", "name", ...
	Reason  string  `json:"reason"`
	Signal  string  `json:"signal,omitempty"`
	Weight  float64 `json:"weight,omitempty"`
	Excerpt string  `json:"excerpt,omitempty"`
}

// Scan reviews d on its own, without the other upstreams' tools (what
// Observe keeps with a pin); Review adds the checks across upstreams.
func Scan(d Definition) []Flag {
	flags, _ := flagsOf(poisoning.Scan(toolOf("", d), nil))
	return flags
}

// toolOf is d as the scanner takes it.
func toolOf(upstream string, d Definition) poisoning.Tool {
	return poisoning.Tool{Upstream: upstream, Name: d.Name, Description: d.Description, InputSchema: d.InputSchema, OutputSchema: d.OutputSchema}
}

// flagsOf is a report as a pin keeps it, and its score.
func flagsOf(r poisoning.Report) ([]Flag, float64) {
	var out []Flag
	for _, f := range r.Findings {
		out = append(out, Flag{Field: f.Field, Reason: f.Detail, Signal: string(f.Signal), Weight: f.Weight, Excerpt: f.Excerpt})
	}
	return out, r.Score
}
