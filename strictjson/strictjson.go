// Package strictjson checks that bytes hold exactly one JSON value that every
// JSON reader would read the same way.
//
// It blocks parser differentials: encoding/json keeps the last of duplicate
// object keys while other readers keep the first, so a document with a
// duplicate key could be verified (or approved) as one thing and used as
// another. It also bounds nesting, so a hostile document fails fast instead
// of recursing deeply, and refuses anything after the value.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The ways a document can fail Check.
var (
	ErrSyntax       = errors.New("not valid JSON")
	ErrDuplicateKey = errors.New("duplicate key")
	ErrTooDeep      = errors.New("nested too deeply")
	ErrTrailing     = errors.New("data after the JSON value")
)

// Check accepts exactly one JSON value with no duplicate object key at any
// depth, in which no value sits deeper than maxDepth (the top-level value
// is at depth 0, its members at depth 1, ...).
func Check(data []byte, maxDepth int) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walk(dec, 0, maxDepth); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return ErrTrailing
	}
	return nil
}

func walk(dec *json.Decoder, depth, maxDepth int) error {
	if depth > maxDepth {
		return fmt.Errorf("%w: deeper than %d levels", ErrTooDeep, maxDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return fmt.Errorf("%w: %v", ErrSyntax, err)
			}
			key, _ := k.(string)
			if seen[key] {
				return fmt.Errorf("%w %q", ErrDuplicateKey, key)
			}
			seen[key] = true
			if err := walk(dec, depth+1, maxDepth); err != nil {
				return err
			}
		}
	case json.Delim('['):
		for dec.More() {
			if err := walk(dec, depth+1, maxDepth); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	return nil
}
