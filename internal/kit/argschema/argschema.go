// Package argschema checks a call's arguments against a JSON Schema: the
// document advertised to the client for one of Airlock's tools, or the
// pinned input schema of an upstream tool. The invariant it keeps: a schema
// loads nothing from outside itself (no file, no URL), and a refusal names
// the offending argument and the rule it breaks, never the value, so a huge
// or hostile value is not echoed back to the agent.
package argschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/airlock-dev/airlock/internal/kit/textcut"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// Validator checks a call's arguments against the tool's generated JSON
// Schema — the very document advertised to the client — so what the agent
// is told it may send and what the runner accepts cannot drift apart.
type Validator struct{ schema *jsonschema.Schema }

// Compile parses and compiles doc, the input schema of tool.
func Compile(tool string, doc []byte) (*Validator, error) {
	parsed, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("tool %s: parsing input schema: %w", tool, err)
	}
	c := jsonschema.NewCompiler()
	// Nothing is loaded from outside the document: an upstream's schema
	// (issue 15) with "$ref": "file:///etc/shadow" or an http URL must
	// not make Airlock read a file or open a connection.
	c.UseLoader(noLoader{})
	url := "airlock:///tools/" + tool + ".json"
	if err := c.AddResource(url, parsed); err != nil {
		return nil, fmt.Errorf("tool %s: %w", tool, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("tool %s: compiling input schema: %w", tool, err)
	}
	return &Validator{schema: s}, nil
}

// noLoader refuses every external schema.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema references an external document; none may be loaded")
}

// Validate returns INVALID_ARGUMENTS naming an offending argument: of
// several, always the same one (the first by location, then by rule), so
// one call gets one refusal text however the library ordered its causes.
// The message carries the JSON pointer and the rule broken, never the
// value, so a huge or hostile value is not echoed back; names the agent
// chose (the pointer's keys, unknown fields) are cut and escaped.
func (v *Validator) Validate(raw []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return violation.Wrap(violation.InvalidArguments, err, "arguments are not valid JSON")
	}
	if anyHugeNumber(inst) {
		at, _ := hugeNumber(inst, nil)
		return violation.New(violation.InvalidArguments, "argument %s is a number too long to check (over %d characters or an exponent beyond ±%d)", pointer(at), maxNumberChars, maxExponent)
	}
	err = v.schema.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return violation.Wrap(violation.InvalidArguments, err, "arguments do not match the input schema")
	}
	leaf := firstLeaf(ve)
	where := pointer(leaf.InstanceLocation)
	switch k := leaf.ErrorKind.(type) {
	case *kind.Required:
		return violation.Wrap(violation.InvalidArguments, err, "argument %s is missing %s", where, names(k.Missing))
	case *kind.AdditionalProperties:
		return violation.Wrap(violation.InvalidArguments, err, "argument %s has unknown field(s) %s", where, names(k.Properties))
	case *kind.Enum:
		// The value is not echoed; the schema the client holds lists them.
		return violation.Wrap(violation.InvalidArguments, err, "argument %s must be one of the %d values its input schema lists", where, len(k.Want))
	}
	rule := strings.Join(leaf.ErrorKind.KeywordPath(), "/")
	return violation.Wrap(violation.InvalidArguments, err, "argument %s breaks schema rule %s", where, textcut.QuoteASCII(rule, maxNameRunes))
}

// firstLeaf is the cause without causes of e that comes first by instance
// location, then by keyword path: the library collects an object's causes
// in map order, so "the first cause" alone named another argument from one
// call to the next.
func firstLeaf(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return e
	}
	var best *jsonschema.ValidationError
	var bestKey string
	for _, c := range e.Causes {
		l := firstLeaf(c)
		key := strings.Join(l.InstanceLocation, "\x00") + "\x01" + strings.Join(l.ErrorKind.KeywordPath(), "\x00")
		if best == nil || key < bestKey {
			best, bestKey = l, key
		}
	}
	return best
}

// Bounds on a number the schema's keywords are checked against: the
// library reads it exactly (math/big), and 1e1000000 took 45 ms a number
// to read — a few hundred bytes of arguments held a core for seconds. No
// float64 or int64 argument needs more.
const (
	maxNumberChars = 100
	maxExponent    = 400
)

// anyHugeNumber reports whether v (decoded by jsonschema.UnmarshalJSON)
// holds a number beyond those bounds. Every call's arguments pass here, so
// it sorts nothing and builds no path; hugeNumber names the place only
// once there is one to name.
func anyHugeNumber(v any) bool {
	switch x := v.(type) {
	case json.Number:
		return tooLong(string(x))
	case []any:
		return slices.ContainsFunc(x, anyHugeNumber)
	case map[string]any:
		for _, e := range x {
			if anyHugeNumber(e) {
				return true
			}
		}
	}
	return false
}

// hugeNumber returns the location of the first number in v (keys in
// order) beyond those bounds.
func hugeNumber(v any, at []string) ([]string, bool) {
	switch x := v.(type) {
	case json.Number:
		return at, tooLong(string(x))
	case []any:
		for i, e := range x {
			if loc, ok := hugeNumber(e, append(at, strconv.Itoa(i))); ok {
				return loc, true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if loc, ok := hugeNumber(x[k], append(at, k)); ok {
				return loc, true
			}
		}
	}
	return nil, false
}

// tooLong reports whether a JSON number literal is beyond the bounds.
func tooLong(n string) bool {
	if len(n) > maxNumberChars {
		return true
	}
	i := strings.IndexAny(n, "eE")
	if i < 0 {
		return false
	}
	e, err := strconv.Atoi(strings.TrimPrefix(n[i+1:], "+"))
	return err != nil || e > maxExponent || e < -maxExponent
}

// maxNameRunes bounds a name a refusal quotes: the agent chose it.
const maxNameRunes = 64

// pointer is the JSON pointer of a location (RFC 6901), quoted.
func pointer(loc []string) string {
	var b strings.Builder
	for _, t := range loc {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	if b.Len() == 0 {
		return `"/"`
	}
	return textcut.QuoteASCII(b.String(), 4*maxNameRunes)
}

// names quotes up to five names, in order, and says how many more.
func names(ns []string) string {
	ns = slices.Sorted(slices.Values(ns))
	out := make([]string, 0, min(len(ns), 5))
	for _, n := range ns[:min(len(ns), 5)] {
		out = append(out, textcut.QuoteASCII(n, maxNameRunes))
	}
	s := strings.Join(out, ", ")
	if len(ns) > 5 {
		s += fmt.Sprintf(" and %d more", len(ns)-5)
	}
	return s
}
