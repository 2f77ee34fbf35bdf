package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/textcut"
)

// Argument names of a comm.mcp need (issue 26, item 1). The policy reads a
// need's arguments from a map, by exact key; an upstream written in Go may
// bind the same bytes into a struct, where encoding/json matches a member
// to a field case-insensitively (with Unicode simple folding). A need
// {"Message": "secret", "LIMIT": 5000} passed rules reading
// args.parameters.arguments.message and .limit (both absent, so nothing
// held), passed a pinned schema that does not forbid unknown keys, and
// reached the upstream as message "secret" and limit 5000.
//
// So every key of the arguments must be one the pinned input schema names,
// spelt exactly (TestUpstreamArgumentNotInSchema): then the keys the policy
// reads are the keys the upstream gets. The keys are those of the decoded
// object; the need's arguments were already refused if their JSON held a
// key twice, or two keys equal under case folding (declarations'
// CanonicalArguments), and they are re-encoded canonically, so the bytes
// sent upstream carry these keys and no others.
//
// A key the schema does not name passes only if the schema explicitly
// allows other keys where it stands (additionalProperties not false, or
// patternProperties) and the caller's policy opts in for the tool
// (mcp_additional_arguments, [policy.Policy.AdditionalArguments]).
//
// Which keys a schema names at one place: those of its properties, of the
// properties of its allOf / anyOf / oneOf branches, and of what a local
// $ref ("#/...") points to, recursively. Objects nested in the arguments
// are checked the same way wherever the schema describes their keys
// (properties, additionalProperties or patternProperties, reached through
// properties, items, prefixItems and the branches); an object the schema
// leaves free-form ({"type": "object"} inside a property, or no schema at
// all) is passed as it is: the schema names no spelling to hold it to
// (SECURITY.md, known limits). At the top level the arguments are always
// held to the schema's names: a schema that names none admits no key
// unless it explicitly allows others.

// ErrArgumentNotInSchema is wrapped by an [ArgumentError].
var ErrArgumentNotInSchema = errors.New("argument not named by the pinned input schema")

// ArgumentError is a key of a comm.mcp need's arguments that the pinned
// input schema does not name.
type ArgumentError struct {
	Path  string // the object holding the key, as a JSON pointer ("" for the top level)
	Key   string
	Names []string // the keys the schema names there, sorted
}

func (e *ArgumentError) Error() string {
	return fmt.Sprintf("argument %s: %v", e.where(), ErrArgumentNotInSchema)
}

func (e *ArgumentError) Unwrap() error { return ErrArgumentNotInSchema }

// where is the key quoted and escaped (bounded: a key can be long), with
// the object it is in.
func (e *ArgumentError) where() string {
	q := textcut.QuoteASCII(e.Key, 64)
	if e.Path != "" {
		q += " in " + strconv.QuoteToASCII(e.Path)
	}
	return q
}

// Message is the refusal as the agent reads it: the key, quoted and
// escaped, and the names the schema gives there.
func (e *ArgumentError) Message() string {
	names := "no argument"
	if len(e.Names) > 0 {
		quoted := make([]string, 0, min(len(e.Names), 10))
		for _, n := range e.Names[:min(len(e.Names), 10)] {
			quoted = append(quoted, strconv.QuoteToASCII(n))
		}
		names = strings.Join(quoted, ", ")
		if len(e.Names) > 10 {
			names += ", …"
		}
	}
	return fmt.Sprintf("argument %s is not named by the pinned input schema, which names %s there (exact spelling: a key in another case would reach the upstream unjudged by the policy)", e.where(), names)
}

// maxSchemaHops bounds how many $ref and branch steps resolving one place
// of a schema may take (a $ref cycle ends there, naming nothing more).
const maxSchemaHops = 32

// argumentShape is a pinned input schema, decoded once per digest, for
// checking argument names.
type argumentShape struct{ root any }

func newArgumentShape(doc json.RawMessage) (*argumentShape, error) {
	var root any
	if len(bytes.TrimSpace(doc)) == 0 {
		return &argumentShape{root: map[string]any{}}, nil
	}
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("decoding the pinned input schema: %w", err)
	}
	return &argumentShape{root: root}, nil
}

// check returns an *ArgumentError for the first key (in sorted order, depth
// first) of args that the schema does not name; additional says the
// policy lets keys the schema explicitly allows through.
func (s *argumentShape) check(args json.RawMessage, additional bool) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("decoding the arguments: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("the arguments are not a JSON object")
	}
	return s.walk([]any{s.root}, v, "", true, additional)
}

// walk checks value against the schemas that apply to it (several when
// branches or $refs meet there).
func (s *argumentShape) walk(schemas []any, value any, path string, top, additional bool) error {
	switch v := value.(type) {
	case map[string]any:
		p := s.place(schemas)
		if !top && !p.described {
			return nil // free-form: no names to hold the keys to
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			sub, named := p.props[k]
			if !named {
				if !(p.open && additional) {
					return &ArgumentError{Path: path, Key: k, Names: p.names()}
				}
				continue
			}
			if err := s.walk(sub, v[k], path+"/"+escapePointer(k), false, additional); err != nil {
				return err
			}
		}
	case []any:
		for i, item := range v {
			if err := s.walk(s.items(schemas, i), item, path+"/"+strconv.Itoa(i), false, additional); err != nil {
				return err
			}
		}
	}
	return nil
}

// place is what the schemas say of an object's keys at one place.
type place struct {
	props     map[string][]any // named key → the schemas of its value
	open      bool             // some schema explicitly allows other keys
	described bool             // some schema says anything about the keys
}

func (p *place) names() []string {
	out := make([]string, 0, len(p.props))
	for k := range p.props {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (s *argumentShape) place(schemas []any) *place {
	p := &place{props: map[string][]any{}}
	for _, n := range s.expand(schemas) {
		if props, ok := n["properties"].(map[string]any); ok {
			p.described = true
			for k, sub := range props {
				p.props[k] = append(p.props[k], sub)
			}
		}
		if ap, ok := n["additionalProperties"]; ok {
			p.described = true
			p.open = p.open || ap != false
		}
		if _, ok := n["patternProperties"]; ok {
			p.described, p.open = true, true
		}
	}
	return p
}

// items returns the schemas of element i of an array.
func (s *argumentShape) items(schemas []any, i int) []any {
	var out []any
	for _, n := range s.expand(schemas) {
		if prefix, ok := n["prefixItems"].([]any); ok && i < len(prefix) {
			out = append(out, prefix[i])
			continue
		}
		switch it := n["items"].(type) {
		case map[string]any:
			out = append(out, it)
		case []any: // draft-04 tuples
			if i < len(it) {
				out = append(out, it[i])
			}
		}
	}
	return out
}

// expand returns the schema objects that apply at one place: the schemas
// themselves, their allOf / anyOf / oneOf branches and their local $ref
// targets, recursively, at most maxSchemaHops steps deep.
func (s *argumentShape) expand(schemas []any) []map[string]any {
	var out []map[string]any
	var visit func(n any, hops int)
	visit = func(n any, hops int) {
		m, ok := n.(map[string]any)
		if !ok || hops > maxSchemaHops {
			return
		}
		out = append(out, m)
		if ref, ok := m["$ref"].(string); ok {
			visit(s.resolve(ref), hops+1)
		}
		for _, kw := range []string{"allOf", "anyOf", "oneOf"} {
			if branches, ok := m[kw].([]any); ok {
				for _, b := range branches {
					visit(b, hops+1)
				}
			}
		}
	}
	for _, n := range schemas {
		visit(n, 0)
	}
	return out
}

// resolve follows a local JSON pointer ("#/$defs/x"); anything else
// resolves to nothing (argschema loads no other document either).
func (s *argumentShape) resolve(ref string) any {
	rest, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	n := s.root
	for _, tok := range strings.Split(rest, "/")[1:] {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := n.(map[string]any)
		if !ok {
			return nil
		}
		n = m[tok]
	}
	return n
}

func escapePointer(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}
