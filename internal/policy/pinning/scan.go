package pinning

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/fence"
)

// Flag is one thing in a definition a reviewer should look at.
type Flag struct {
	Field  string `json:"field"` // "description", "inputSchema", ...
	Reason string `json:"reason"`
}

// instructionPhrases are words addressed to a model rather than a user:
// tool poisoning hides them in descriptions ("ignore previous
// instructions", "do not tell the user", fake system tags).
var instructionPhrases = []string{
	"ignore previous", "ignore all previous", "ignore the above", "disregard previous", "disregard all",
	"do not tell the user", "don't tell the user", "without telling", "do not mention", "don't mention",
	"you must", "you should always", "before using this tool", "instead of", "system prompt",
	"<important>", "</important>", "<system>", "[system]", "assistant:", "<instructions>",
	"read the file", "~/.ssh", "id_rsa", ".env", "api key", "password", "exfiltrat", "send it to", "pass it as",
}

// maxDescription is the length beyond which a description is flagged:
// long enough for any honest description, short of a hidden essay.
const maxDescription = 2048

// Scan flags what a reviewer should look at in a definition: invisible,
// bidi, tag and control characters (anything fence.Sanitize would change),
// phrases addressed to a model, a very long description — in the
// description and in every description string inside the schemas.
func Scan(d Definition) []Flag {
	var flags []Flag
	scanText := func(field, s string) {
		if _, st := fence.Sanitize(s); st != (fence.SanitizeStats{}) {
			flags = append(flags, Flag{Field: field, Reason: "holds characters a reader cannot see or that change how text reads (invisible, bidi, tag or control characters, escape sequences, marker look-alikes)"})
		}
		lower := strings.ToLower(s)
		for _, p := range instructionPhrases {
			if strings.Contains(lower, p) {
				flags = append(flags, Flag{Field: field, Reason: "reads like an instruction to the model: " + p})
			}
		}
	}
	scanText("name", d.Name)
	scanText("description", d.Description)
	if len(d.Description) > maxDescription {
		flags = append(flags, Flag{Field: "description", Reason: "longer than 2048 bytes"})
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"inputSchema", d.InputSchema}, {"outputSchema", d.OutputSchema}} {
		var v any
		if json.Unmarshal(f.raw, &v) == nil {
			walkStrings(v, f.name, scanText)
		}
	}
	return flags
}

// walkStrings visits every string in a decoded schema (descriptions,
// titles, defaults, enum values), naming where it is.
func walkStrings(v any, at string, visit func(field, s string)) {
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) { // flags in a stable order
			walkStrings(t[k], at+"."+k, visit)
		}
	case []any:
		for _, val := range t {
			walkStrings(val, at+"[]", visit)
		}
	case string:
		visit(at, t)
	}
}
