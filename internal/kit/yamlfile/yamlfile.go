// Package yamlfile decodes configuration YAML strictly and reports every
// problem as file:line.
//
// Strict means an unknown key, a type mismatch or a duplicate key is an error,
// never silently ignored: a policy author who misspells "deny" must not get a
// policy without its deny list. Semantic checks that run after decoding (an
// expr condition that does not compile, a child policy that widens its parent)
// name the offending node by its YAML path and use [Locate] to turn that path
// into a line, so every error a user sees points into their file.
package yamlfile

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
)

// Error is a problem at a position in a YAML file.
type Error struct {
	File   string
	Line   int // 1-based; 0 when unknown
	Column int
	Path   string // YAML path such as $.policies.base.rules[0].when, when known
	Err    error
}

func (e *Error) Error() string {
	switch {
	case e.Line > 0 && e.Path != "":
		return fmt.Sprintf("%s:%d:%d: %s: %v", e.File, e.Line, e.Column, e.Path, e.Err)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d:%d: %v", e.File, e.Line, e.Column, e.Err)
	case e.Path != "":
		return fmt.Sprintf("%s: %s: %v", e.File, e.Path, e.Err)
	default:
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
}

func (e *Error) Unwrap() error { return e.Err }

// ErrEmpty reports a document with no content.
var ErrEmpty = errors.New("empty document")

// ErrMalformed reports input the YAML parser could not handle at all.
var ErrMalformed = errors.New("malformed YAML")

// Decode strictly decodes data (read from file name) into v. Struct fields
// are matched by their json tags, so one set of tags serves YAML decoding and
// JSON Schema generation.
func Decode(name string, data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return &Error{File: name, Err: ErrEmpty}
	}
	err := Guard(name, func() error {
		return yaml.UnmarshalWithOptions(data, v, yaml.Strict(), yaml.DisallowUnknownField())
	})
	if err == nil {
		return nil
	}
	out := FromError(name, err)
	if s := didYouMean(data, v, err); s != "" {
		out.Err = fmt.Errorf("%w (did you mean %q?)", out.Err, s)
	}
	return out
}

// Guard runs a goccy decode and turns a panic into an error: goccy/go-yaml
// v1.19 dereferences nil on some malformed input (an empty tag where a list
// is expected: "cases: ! "), and a config or policy file must never crash the
// server or the CLI.
func Guard(name string, decode func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &Error{File: name, Err: fmt.Errorf("%w: %v", ErrMalformed, p)}
		}
	}()
	return decode()
}

// FromError gives an error from goccy/go-yaml the file:line shape of this
// package's errors; an *Error is returned unchanged.
func FromError(name string, err error) *Error {
	var own *Error
	if errors.As(err, &own) {
		return own
	}
	out := &Error{File: name, Err: err}
	var ye yaml.Error
	if errors.As(err, &ye) {
		if tok := ye.GetToken(); tok != nil && tok.Position != nil {
			out.Line, out.Column = tok.Position.Line, tok.Position.Column
		}
		out.Err = errors.New(ye.GetMessage())
	}
	return out
}

// Locate returns the 1-based line and column of the node at yamlPath (for
// example "$.policies.base.rules[0].when") in data, or 0, 0 if it is absent.
func Locate(data []byte, yamlPath string) (line, column int) {
	p, err := yaml.PathString(yamlPath)
	if err != nil {
		return 0, 0
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return 0, 0
	}
	node, err := p.FilterFile(f)
	if err != nil || node == nil {
		return 0, 0
	}
	tok := node.GetToken()
	if tok == nil || tok.Position == nil {
		return 0, 0
	}
	return tok.Position.Line, tok.Position.Column
}

// At builds an *Error for a semantic problem found at yamlPath after decoding.
func At(name string, data []byte, yamlPath string, err error) *Error {
	line, col := Locate(data, yamlPath)
	return &Error{File: name, Line: line, Column: col, Path: yamlPath, Err: err}
}
