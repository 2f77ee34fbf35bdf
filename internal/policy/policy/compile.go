package policy

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"

	"github.com/airlock-dev/airlock/internal/kit/capability"
	"github.com/airlock-dev/airlock/internal/policy/limits"
)

// maxWhen bounds a condition's length; a policy is read by people and a
// bound keeps a hostile file from making the load slow.
const maxWhen = 4096

// Policy is a compiled, immutable policy, safe for concurrent use. It holds
// its whole inheritance chain: one layer per policy from the root ancestor
// down to itself.
type Policy struct {
	name     string
	version  string // see versionOf; "" for one built by Compile
	desc     string
	layers   []*layer // root first
	net      *network
	fs       *filesystem
	limits   LimitsSpec
	uses     uses // which derived identifiers any rule reads
	hasRules bool // some policy in the chain has rules
	ruleIDs  map[string]bool
}

// layer is what one policy in a chain contributes.
type layer struct {
	name    string
	allow   []entry
	deny    []entry
	rules   []*rule
	neutral bool // no allows of its own: defers to its ancestors for allow
	// additional: mcp_additional_arguments (additional.go); empty defers
	// to the ancestors, and for the root means none.
	additional []capability.Pattern
	dflt       string
}

// entry is a compiled allow or deny pattern with its decision text built
// once, so that deciding does not format strings.
type entry struct {
	pat     capability.Pattern
	id      string // "allow:pool.*" or "deny:comm.*"
	reason  string
	matched []string // {id} with cap 1, shared by decisions: appending copies
}

type rule struct {
	id      string
	cap     capability.Pattern
	when    string
	prog    *vm.Program // nil: always true
	effect  Effect
	uses    uses
	reason  string // "rule x of policy y matched: <when>"
	matched []string
}

type uses uint8

const (
	usesURL uses = 1 << iota
	usesPool
	usesPath
	usesQuery
	usesProvenance
)

var exprOptions = append([]expr.Option{
	expr.Env(Env{}),
	expr.AsBool(),
	// now() would read the wall clock and make conditions untestable; the
	// now variable is the call's time, which a test case can set.
	expr.DisableBuiltin("now"),
}, append(nowFunctions(), readersFunctions()...)...)

// Compile checks spec and returns the policy it describes. It is for a
// single policy without a parent; spec.Extends must be empty (use CompileSet
// for named policies that inherit). Errors are *FieldError.
func Compile(spec Spec) (*Policy, error) {
	if spec.Extends != "" {
		return nil, &FieldError{Field: ".extends", Err: fmt.Errorf("%q: Compile does not resolve parents, use CompileSet: %w", spec.Extends, ErrUnknownParent)}
	}
	return compile("", spec, nil)
}

// compile builds the policy called name from spec on top of parent (nil for
// a root). Errors are *FieldError with a path relative to the policy.
func compile(name string, spec Spec, parent *Policy) (*Policy, error) {
	l := &layer{name: name}
	var err error
	if l.allow, err = compileEntries(name, "allow", spec.Allow); err != nil {
		return nil, err
	}
	if l.deny, err = compileEntries(name, "deny", spec.Deny); err != nil {
		return nil, err
	}
	if err := compileAdditional(l, spec.MCPAdditionalArguments, parent); err != nil {
		return nil, err
	}
	p := &Policy{name: name, desc: spec.Description, ruleIDs: map[string]bool{}}
	if parent != nil {
		p.layers = append(p.layers, parent.layers...)
		p.uses, p.hasRules = parent.uses, parent.hasRules
		for id := range parent.ruleIDs {
			p.ruleIDs[id] = true
		}
	}
	hasAllowRule, err := p.addRules(l, spec.Rules)
	if err != nil {
		return nil, err
	}
	// A root is never neutral: with nothing allowed it allows nothing.
	l.neutral = parent != nil && len(l.allow) == 0 && !hasAllowRule
	l.dflt = "no allow pattern or allow rule" + ofPolicy(name) + " matches the capability"
	if parent != nil {
		if err := checkAllowsNarrow(parent, l); err != nil {
			return nil, err
		}
	}
	p.layers = append(p.layers, l)

	var parentNet *network
	var parentFS *filesystem
	if parent != nil {
		parentNet, parentFS = parent.net, parent.fs
	}
	if p.net, err = compileNetwork(spec.Network, parentNet); err != nil {
		return nil, withPolicy(name, err)
	}
	if p.fs, err = compileFilesystem(spec.Filesystem, parentFS); err != nil {
		return nil, withPolicy(name, err)
	}
	if err := spec.Limits.Validate(); err != nil {
		return nil, limitsErr(name, err)
	}
	p.limits = limits.Merge(LimitsSpec{}, spec.Limits) // a copy: the caller keeps its maps
	if parent != nil {
		if err := limits.Narrows(parent.limits, spec.Limits); err != nil {
			return nil, limitsErr(name, err)
		}
		p.limits = limits.Merge(parent.limits, spec.Limits)
	}
	return p, nil
}

// addRules compiles a policy's own rules into l, refusing an id already
// used in the chain, and reports whether any of them is an allow rule.
func (p *Policy) addRules(l *layer, specs []RuleSpec) (hasAllow bool, err error) {
	for i, rs := range specs {
		r, field, err := compileRule(l.name, i, rs)
		if err != nil {
			return false, &FieldError{Policy: l.name, Field: field, Err: err}
		}
		if p.ruleIDs[r.id] {
			return false, &FieldError{Policy: l.name, Field: fmt.Sprintf(".rules[%d].id", i),
				Err: fmt.Errorf("%q is already used in this policy or an ancestor: %w", r.id, ErrInvalidRule)}
		}
		p.ruleIDs[r.id] = true
		p.uses |= r.uses
		p.hasRules = true
		hasAllow = hasAllow || r.effect == Allow
		l.rules = append(l.rules, r)
	}
	return hasAllow, nil
}

func withPolicy(name string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		fe.Policy = name
	}
	return err
}

func limitsErr(name string, err error) error {
	var le *limits.FieldError
	if errors.As(err, &le) {
		return &FieldError{Policy: name, Field: ".limits" + le.Path, Err: le.Err}
	}
	return &FieldError{Policy: name, Field: ".limits", Err: err}
}

func ofPolicy(name string) string {
	if name == "" {
		return ""
	}
	return " of policy " + strconv.Quote(name)
}

func compileEntries(policy, list string, texts []string) ([]entry, error) {
	out := make([]entry, 0, len(texts))
	word := "allow"
	if list == "deny" {
		word = "deny"
	}
	for i, t := range texts {
		pat, err := capability.Parse(t)
		if err != nil {
			return nil, &FieldError{Policy: policy, Field: fmt.Sprintf(".%s[%d]", list, i), Err: fmt.Errorf("%w: %w", ErrInvalidPattern, err)}
		}
		id := word + ":" + t
		out = append(out, entry{
			pat:     pat,
			id:      id,
			reason:  "capability matches " + word + " pattern " + strconv.Quote(t) + ofPolicy(policy),
			matched: []string{id},
		})
	}
	return out, nil
}

// validRuleID is a policy name's alphabet, less the ids the decision
// itself reports a match by ("default", "network").
func validRuleID(id string) bool {
	return id != "default" && id != "network" && validName(id)
}

// compileRule compiles rules[i]; on error it also returns the field at fault.
func compileRule(policy string, i int, rs RuleSpec) (*rule, string, error) {
	at := func(f string) string { return fmt.Sprintf(".rules[%d]%s", i, f) }
	if !validRuleID(rs.ID) {
		return nil, at(".id"), fmt.Errorf("id %q: want 1-64 letters, digits, '_', '-' or '.', not default or network: %w", rs.ID, ErrInvalidRule)
	}
	if rs.Capability == "" {
		return nil, at(""), fmt.Errorf("rule %q has no capability (use \"*\" for every capability): %w", rs.ID, ErrInvalidRule)
	}
	pat, err := capability.Parse(rs.Capability)
	if err != nil {
		return nil, at(".capability"), fmt.Errorf("%w: %w", ErrInvalidPattern, err)
	}
	if !rs.Effect.valid() {
		return nil, at(".effect"), fmt.Errorf("effect %q: want allow, deny or require_approval: %w", rs.Effect, ErrInvalidRule)
	}
	r := &rule{id: rs.ID, cap: pat, when: strings.TrimSpace(rs.When), effect: rs.Effect, matched: []string{rs.ID}}
	r.reason = "rule " + strconv.Quote(r.id) + ofPolicy(policy) + " matched"
	if r.when != "" {
		r.reason += ": " + r.when
	}
	if rs.Description != "" {
		r.reason += " (" + rs.Description + ")"
	}
	if r.when == "" {
		return r, "", nil
	}
	if len(r.when) > maxWhen {
		return nil, at(".when"), fmt.Errorf("condition longer than %d bytes: %w", maxWhen, ErrExpression)
	}
	prog, err := expr.Compile(r.when, exprOptions...)
	if err != nil {
		return nil, at(".when"), fmt.Errorf("%w: %w", ErrExpression, err)
	}
	r.prog = prog
	r.uses = identifiers(prog.Node())
	return r, "", nil
}

// identifiers reports which lazily derived env fields a condition reads,
// so a decision only does the work (a URL parse, argument lookups) that
// some rule needs.
func identifiers(n ast.Node) uses {
	v := &identVisitor{}
	ast.Walk(&n, v)
	return v.u
}

type identVisitor struct{ u uses }

func (v *identVisitor) Visit(n *ast.Node) {
	id, ok := (*n).(*ast.IdentifierNode)
	if !ok {
		return
	}
	switch id.Value {
	case "url":
		v.u |= usesURL
	case "pool":
		v.u |= usesPool
	case "path":
		v.u |= usesPath
	case "query":
		v.u |= usesQuery
	}
	if slices.Contains(provenanceIdents, id.Value) {
		v.u |= usesProvenance
	}
}

// Name is the policy's name ("" for one built by Compile).
func (p *Policy) Name() string { return p.name }

// Version fingerprints the policy and its ancestors as written.
func (p *Policy) Version() string { return p.version }

// Description is the policy's description as written.
func (p *Policy) Description() string { return p.desc }

// Chain lists the policy's inheritance chain, root ancestor first, ending
// with the policy itself.
func (p *Policy) Chain() []string {
	out := make([]string, len(p.layers))
	for i, l := range p.layers {
		out[i] = l.name
	}
	return out
}

// Limits returns the limits the policy's sessions run under, merged with
// its ancestors'. The maps are shared and must not be modified.
func (p *Policy) Limits() LimitsSpec { return p.limits }
