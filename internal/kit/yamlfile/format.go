package yamlfile

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/goccy/go-yaml"
)

// ErrFormatChanged means formatting would change what the document says:
// Format refuses rather than rewrite a policy into a different one.
var ErrFormatChanged = errors.New("formatting would change the document's meaning")

// Format returns data in canonical form: two-space indentation, sequences
// indented under their key, short lists of scalars in flow style on their
// key's line, a blank line between top-level sections, keys in their
// original order, one style per scalar (see style.go). Comments are kept where the YAML library can attach them to a
// node (a comment on its own line above a key, or at the end of a key's
// line); a comment it cannot attach, such as one between sequence items'
// fields or after the last node, is dropped — `airlock policy fmt` says
// so. Anchors and aliases are expanded. Format fails closed: it decodes its
// own output and returns ErrFormatChanged unless that is the same value as
// the input, and it is idempotent (TestFormat, FuzzFormat).
func Format(name string, data []byte) ([]byte, error) {
	var v any
	cm := yaml.CommentMap{}
	if err := Guard(name, func() error {
		return yaml.UnmarshalWithOptions(data, &v, yaml.UseOrderedMap(), yaml.Strict(), yaml.CommentToMap(cm))
	}); err != nil {
		return nil, FromError(name, err)
	}
	if v == nil {
		return nil, &Error{File: name, Err: ErrEmpty}
	}
	var out []byte
	if err := Guard(name, func() (err error) {
		out, err = yaml.MarshalWithOptions(v, yaml.Indent(2), yaml.IndentSequence(true), yaml.WithComment(cm), yaml.UseLiteralStyleIfMultiline(true))
		return err
	}); err != nil {
		return nil, &Error{File: name, Err: fmt.Errorf("encoding: %w", err)}
	}
	out = canonicalStyle(out)
	if err := sameValue(name, data, out); err != nil {
		return nil, err
	}
	return out, nil
}

// sameValue decodes both documents plainly and compares them.
func sameValue(name string, a, b []byte) error {
	var va, vb any
	if err := Guard(name, func() error { return yaml.Unmarshal(a, &va) }); err != nil {
		return FromError(name, err)
	}
	if err := Guard(name, func() error { return yaml.Unmarshal(b, &vb) }); err != nil {
		return &Error{File: name, Err: fmt.Errorf("%w: the output does not parse: %v", ErrFormatChanged, err)}
	}
	if !reflect.DeepEqual(va, vb) {
		return &Error{File: name, Err: ErrFormatChanged}
	}
	return nil
}
