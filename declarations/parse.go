package declarations

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/kit/strictjson"
)

// MaxNeedJSONBytes bounds the JSON text ParseNeed reads. A valid need is
// far smaller even with every character written as a \u escape.
const MaxNeedJSONBytes = 64 << 10

// ParseNeed decodes one need from JSON strictly and validates it. It is
// the parser for needs that arrive outside the runner's schema check (a
// file, a stored record); it accepts a subset of what encoding/json would,
// so a reader using encoding/json on accepted input sees the same need
// (FuzzNeedJSON). It refuses, as a *FieldError wrapping ErrInvalid:
//
//   - more than MaxNeedJSONBytes, invalid UTF-8 (encoding/json would
//     silently turn it into U+FFFD), or anything but one JSON object;
//   - a duplicate key at any depth (encoding/json keeps the last, other
//     readers the first: each would approve a different need);
//   - a key that is not exactly one of the need's (encoding/json matches
//     keys case-insensitively, a JSON Schema validator does not);
//   - null or a value of the wrong type for a field;
//
// and then whatever [Need.Validate] refuses. Error text never repeats the
// input.
func ParseNeed(data []byte) (*Need, error) {
	switch {
	case len(data) > MaxNeedJSONBytes:
		return nil, invalid("", fmt.Sprintf("larger than %d bytes", MaxNeedJSONBytes))
	case !utf8.Valid(data):
		return nil, invalid("", "not valid UTF-8")
	}
	if err := checkJSON(data); err != nil {
		return nil, err
	}
	var n Need
	var top, params, just map[string]json.RawMessage
	if err := object("", data, &top, "operation", "parameters", "justification"); err != nil {
		return nil, err
	}
	var op string
	err := errors.Join(
		str("operation", top, &op),
		object("parameters", top["parameters"], &params, "url", "query", "source", "upstream", "tool", "arguments"),
		object("justification", top["justification"], &just, "user_request", "missing_knowledge", "expected_use"),
	)
	if err != nil {
		return nil, firstField(err)
	}
	n.Operation = Operation(op)
	err = errors.Join(
		str("parameters.url", params, &n.Parameters.URL),
		str("parameters.query", params, &n.Parameters.Query),
		str("parameters.source", params, &n.Parameters.Source),
		str("parameters.upstream", params, &n.Parameters.Upstream),
		str("parameters.tool", params, &n.Parameters.Tool),
		argsObject(params, &n.Parameters.Arguments),
		str("justification.user_request", just, &n.Justification.UserRequest),
		str("justification.missing_knowledge", just, &n.Justification.MissingKnowledge),
		str("justification.expected_use", just, &n.Justification.ExpectedUse),
	)
	if err != nil {
		return nil, firstField(err)
	}
	if err := n.Validate(); err != nil {
		return nil, err
	}
	return &n, nil
}

// firstField returns the first *FieldError joined in err.
func firstField(err error) error {
	var fe *FieldError
	errors.As(err, &fe)
	return fe
}

// object decodes raw, when present, as a JSON object whose keys are all
// among known, exactly.
func object(field string, raw json.RawMessage, dst *map[string]json.RawMessage, known ...string) error {
	name := field
	if name == "" {
		name = "the need"
	}
	if raw == nil && field != "" {
		return nil // absent: Validate reports the required fields
	}
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, dst) != nil {
		return invalid(field, "must be a JSON object")
	}
	for k := range *dst {
		found := false
		for _, want := range known {
			found = found || k == want
		}
		if !found {
			return invalid(field, fmt.Sprintf("unknown key in %s: keys are %s, matched exactly", name, strings.Join(known, ", ")))
		}
	}
	return nil
}

// str decodes obj[key], when present, as a JSON string; null is refused.
func str(field string, obj map[string]json.RawMessage, dst *string) error {
	raw, ok := obj[lastKey(field)]
	if !ok {
		return nil
	}
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, dst) != nil {
		return invalid(field, "must be a JSON string")
	}
	return nil
}

// argsObject takes comm.mcp's arguments, when present, as they are; Validate
// checks them (one strict object) and makes them canonical. null is refused.
func argsObject(obj map[string]json.RawMessage, dst *json.RawMessage) error {
	raw, ok := obj["arguments"]
	if !ok {
		return nil
	}
	if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
		return invalid("parameters.arguments", "must be a JSON object")
	}
	*dst = raw
	return nil
}

func lastKey(field string) string {
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		return field[i+1:]
	}
	return field
}

// maxJSONDepth is how deep a need nests values (the need, parameters or
// justification, a string, and a comm.mcp need's arguments below
// parameters), so a deeper document fails fast instead of recursing.
const maxJSONDepth = 3 + maxArgumentsDepth

// checkJSON accepts exactly one JSON value with no duplicate object key at
// any depth, in which nothing nests deeper than a need does.
func checkJSON(data []byte) error {
	err := strictjson.Check(data, maxJSONDepth-1)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, strictjson.ErrTooDeep):
		return invalid("", fmt.Sprintf("nested deeper than a need (%d levels)", maxJSONDepth))
	case errors.Is(err, strictjson.ErrDuplicateKey):
		return invalid("", "duplicate key")
	case errors.Is(err, strictjson.ErrTrailing):
		return invalid("", "data after the JSON object")
	default:
		return invalid("", "not valid JSON")
	}
}
