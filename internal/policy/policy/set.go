package policy

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/airlock-dev/airlock/internal/kit/yamlfile"
	"github.com/airlock-dev/airlock/internal/policy/limits"
)

// Set is a compiled set of named policies, immutable and safe for
// concurrent use.
type Set struct {
	policies map[string]*Policy
	names    []string
}

// Get returns the policy called name.
func (s *Set) Get(name string) (*Policy, bool) {
	if s == nil {
		return nil, false
	}
	p, ok := s.policies[name]
	return p, ok
}

// Extends reports whether the policy called child is the policy called
// parent or has it in its inheritance chain, so it can only restrict it
// (contexts.PolicyLineage).
func (s *Set) Extends(child, parent string) bool {
	p, ok := s.Get(child)
	if !ok {
		return false
	}
	return slices.Contains(p.Chain(), parent)
}

// versionOf fingerprints a policy as written together with its ancestors, so
// that any change to the chain gives a new version: an approval question
// asked under one version is not answered under another.
func versionOf(spec Spec, parent *Policy) string {
	b, _ := json.Marshal(spec) // a decoded Spec always encodes
	h := sha256.New()
	if parent != nil {
		h.Write([]byte(parent.version))
	}
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Names lists the policies in the set, sorted.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.names)
}

// CompileSet compiles the named policies decoded from data, the contents of
// the file called name (both are only used to put a file and line on
// errors). Parents are compiled before their children; a problem in one
// policy does not hide problems in the others, so the error joins one
// *yamlfile.Error per failing policy, in file order. A child of a policy
// that failed is not reported again.
func CompileSet(name string, data []byte, specs map[string]Spec) (*Set, error) {
	s := &Set{policies: make(map[string]*Policy, len(specs))}
	for n := range specs {
		s.names = append(s.names, n)
	}
	slices.Sort(s.names)

	var errs []*yamlfile.Error
	at := func(path string, err error) {
		errs = append(errs, yamlfile.At(name, data, path, err))
	}
	failed := map[string]bool{}
	state := map[string]int{} // 0 new, 1 compiling, 2 done
	var visit func(n string, stack []string)
	visit = func(n string, stack []string) {
		if state[n] == 2 {
			return
		}
		base := "$.policies" + limits.Key(n)
		if state[n] == 1 {
			at(base+".extends", fmt.Errorf("%s: %w", cycleText(stack, n), ErrCycle))
			for _, m := range stack {
				failed[m] = true
			}
			return
		}
		state[n] = 1
		defer func() { state[n] = 2 }()
		spec := specs[n]
		if !validName(n) {
			at(base, fmt.Errorf("%q: want 1-64 letters, digits, '_', '-' or '.': %w", n, ErrInvalidName))
			failed[n] = true
			return
		}
		var parent *Policy
		if spec.Extends != "" {
			if _, ok := specs[spec.Extends]; !ok {
				at(base+".extends", fmt.Errorf("%q: %w", spec.Extends, ErrUnknownParent))
				failed[n] = true
				return
			}
			visit(spec.Extends, append(stack, n))
			if failed[spec.Extends] || failed[n] {
				failed[n] = true // already reported
				return
			}
			parent = s.policies[spec.Extends]
		}
		p, err := compile(n, spec, parent)
		if err != nil {
			var fe *FieldError
			if errors.As(err, &fe) {
				at(base+fe.Field, fe.Err)
			} else {
				at(base, err)
			}
			failed[n] = true
			return
		}
		p.version = versionOf(spec, parent)
		s.policies[n] = p
	}
	for _, n := range s.names {
		visit(n, nil)
	}
	if len(errs) == 0 {
		return s, nil
	}
	slices.SortStableFunc(errs, func(a, b *yamlfile.Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Path, b.Path))
	})
	joined := make([]error, len(errs))
	for i, e := range errs {
		joined[i] = e
	}
	return nil, errors.Join(joined...)
}

func cycleText(stack []string, n string) string {
	i := slices.Index(stack, n)
	loop := append(slices.Clone(stack[i:]), n)
	out := ""
	for j, m := range loop {
		if j > 0 {
			out += " extends "
		}
		out += fmt.Sprintf("%q", m)
	}
	return out
}

func validName(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// LoadFile reads a policy file (an Airlock configuration file, or any YAML
// file with a policies: section) and compiles its policies. Only policies
// is read: other top-level sections are ignored here (the configuration
// loader checks them), but inside policies decoding is strict, so a
// misspelt key is an error with its file and line. Anchors used inside
// policies must also be defined there.
func LoadFile(path string) (*Set, error) {
	set, _, _, err := loadFile(path)
	return set, err
}

// loadFile is LoadFile, also returning the file's bytes and decoded
// policies for the checks that come after loading (CheckFile).
func loadFile(path string) (*Set, []byte, map[string]Spec, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, nil, nil, err
	}
	specs, err := DecodePolicies(path, data)
	if err != nil {
		return nil, nil, nil, err
	}
	set, err := CompileSet(path, data, specs)
	if err != nil {
		return nil, nil, nil, err
	}
	return set, data, specs, nil
}

func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading policy file: %w", err)
	}
	return data, nil
}

// DecodePolicies strictly decodes the policies: section of data, read from
// the file called name, ignoring every other top-level key.
func DecodePolicies(name string, data []byte) (map[string]Spec, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &yamlfile.Error{File: name, Err: yamlfile.ErrEmpty}
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, yamlfile.FromError(name, err)
	}
	if len(f.Docs) != 1 {
		return nil, &yamlfile.Error{File: name, Err: fmt.Errorf("want exactly one YAML document, found %d", len(f.Docs))}
	}
	top, ok := f.Docs[0].Body.(*ast.MappingNode)
	if !ok {
		return nil, &yamlfile.Error{File: name, Line: 1, Err: fmt.Errorf("want a mapping with a policies key: %w", ErrNoPolicies)}
	}
	var node ast.Node
	for _, kv := range top.Values {
		if k, ok := kv.Key.(*ast.StringNode); ok && k.Value == "policies" {
			node = kv.Value
		}
	}
	if node == nil {
		return nil, &yamlfile.Error{File: name, Line: 1, Err: ErrNoPolicies}
	}
	var specs map[string]Spec
	err = yamlfile.Guard(name, func() error {
		return yaml.NodeToValue(node, &specs, yaml.Strict(), yaml.DisallowUnknownField())
	})
	if err != nil {
		return nil, yamlfile.FromError(name, err)
	}
	if len(specs) == 0 {
		return nil, yamlfile.At(name, data, "$.policies", ErrNoPolicies)
	}
	return specs, nil
}
