package policy

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/capability"
)

// mcp_additional_arguments (issue 26, item 1). A comm.mcp need's argument
// keys must be ones the tool's pinned input schema names, spelt exactly,
// because the policy reads them by exact key while an upstream may bind
// them case-insensitively (package upstream, arguments.go). A tool whose
// schema explicitly allows other keys (additionalProperties not false, or
// patternProperties) may take them only where the policy opts in:
//
//	mcp_additional_arguments: ["mcp.search.query"]
//
// A policy that does not list any defers to its parent; the root's absence
// means none. A child that lists patterns narrows: each must be covered by
// a pattern of its nearest ancestor that lists some (else ErrWidens, as a
// wider allow is refused), and at run time every listing policy of the
// chain must match (TestAdditionalArguments).

// compileAdditional parses texts into l, checking that each is an mcp.*
// pattern within what the parent chain already opts into.
func compileAdditional(l *layer, texts []string, parent *Policy) error {
	var bound []capability.Pattern
	if parent != nil {
		for i := len(parent.layers) - 1; i >= 0 && bound == nil; i-- {
			bound = parent.layers[i].additional
		}
	}
	for i, t := range texts {
		field := fmt.Sprintf(".mcp_additional_arguments[%d]", i)
		pat, err := capability.Parse(t)
		if err != nil {
			return &FieldError{Policy: l.name, Field: field, Err: fmt.Errorf("%w: %w", ErrInvalidPattern, err)}
		}
		if !strings.HasPrefix(t, MCPPrefix) || len(t) == len(MCPPrefix) {
			return &FieldError{Policy: l.name, Field: field, Err: fmt.Errorf("%q: only mcp.* capabilities take arguments an upstream's schema names: %w", t, ErrInvalidPattern)}
		}
		if parent != nil && !coveredBy(pat, bound) {
			return &FieldError{Policy: l.name, Field: field,
				Err: fmt.Errorf("%q is not within the mcp_additional_arguments of %s (%s): %w", t, quoteName(parent.name), patternList(bound), ErrWidens)}
		}
		l.additional = append(l.additional, pat)
	}
	return nil
}

// AdditionalArguments reports whether needs of capability c may carry
// argument keys the tool's pinned input schema does not name, where the
// schema explicitly allows other keys: the root policy of the chain lists
// a pattern matching c, and so does every descendant that lists any.
func (p *Policy) AdditionalArguments(c string) bool {
	if p == nil || len(p.layers) == 0 || len(p.layers[0].additional) == 0 {
		return false
	}
	for _, l := range p.layers {
		if len(l.additional) > 0 && !matchesAny(l.additional, c) {
			return false
		}
	}
	return true
}

func matchesAny(pats []capability.Pattern, c string) bool {
	for _, p := range pats {
		if p.Match(c) {
			return true
		}
	}
	return false
}
