// Package argschema checks a call's arguments against a JSON Schema: the
// document advertised to the client for one of Airlock's tools, or the
// pinned input schema of an upstream tool. The invariant it keeps: a schema
// loads nothing from outside itself (no file, no URL), and a refusal names
// the offending argument and the rule it breaks, never the value, so a huge
// or hostile value is not echoed back to the agent.
package argschema

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

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

// Validate returns INVALID_ARGUMENTS naming the first offending argument.
// The message carries the JSON pointer and the rule broken, never the value,
// so a huge or hostile value is not echoed back.
func (v *Validator) Validate(raw []byte) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return violation.Wrap(violation.InvalidArguments, err, "arguments are not valid JSON")
	}
	err = v.schema.Validate(inst)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return violation.Wrap(violation.InvalidArguments, err, "arguments do not match the input schema")
	}
	leaf := ve
	for len(leaf.Causes) > 0 {
		leaf = leaf.Causes[0]
	}
	where := "/" + strings.Join(leaf.InstanceLocation, "/")
	switch k := leaf.ErrorKind.(type) {
	case *kind.Required:
		return violation.Wrap(violation.InvalidArguments, err, "argument %s is missing %s", where, strings.Join(k.Missing, ", "))
	case *kind.AdditionalProperties:
		return violation.Wrap(violation.InvalidArguments, err, "argument %s has unknown field(s) %s", where, strings.Join(k.Properties, ", "))
	case *kind.Enum:
		// The value is not echoed; the schema the client holds lists them.
		return violation.Wrap(violation.InvalidArguments, err, "argument %s must be one of the %d values its input schema lists", where, len(k.Want))
	}
	rule := strings.Join(leaf.ErrorKind.KeywordPath(), "/")
	return violation.Wrap(violation.InvalidArguments, err, "argument %s breaks schema rule %q", where, rule)
}
