// Package policy decides whether a call's capability may run.
//
// The model is deny-first (seed 003): a policy has allow and deny pattern
// lists over capability ids such as "pool.read" or "pipeline.run:report_*".
// A matching deny always wins, no match at all is a denial, and a policy that
// cannot be compiled is refused at load time rather than read leniently.
package policy

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Effect is the outcome of a decision.
type Effect string

// The effects a decision can have, in precedence order deny > require_approval > allow.
const (
	Deny            Effect = "deny"
	RequireApproval Effect = "require_approval"
	Allow           Effect = "allow"
)

// ErrInvalidPattern reports a capability pattern that cannot be used.
var ErrInvalidPattern = errors.New("invalid capability pattern")

// Spec is the policy as written in the configuration file.
type Spec struct {
	// Allow lists capability patterns that may run; "*" matches any run of characters.
	Allow []string `json:"allow,omitempty" jsonschema:"description=Capability patterns that may run (e.g. pool.*). No match means deny."`
	// Deny lists capability patterns that never run; deny overrides allow.
	Deny []string `json:"deny,omitempty" jsonschema:"description=Capability patterns that never run; a deny match always wins."`
}

// Input is what a decision is made over. The runner fills it from the call
// and the session; nothing in it comes from the agent except Args.
type Input struct {
	Tool       string
	Capability string
	Tier       string
	Session    string
	Principal  string
	Role       string
	Phase      string
	Args       map[string]any
	Now        time.Time
}

// Decision is the result of [Policy.Decide]: the effect, the rule that
// decided it and a reason an operator can read in the audit trail.
type Decision struct {
	Effect Effect
	RuleID string
	Reason string
}

// Policy is a compiled, immutable policy, safe for concurrent use.
type Policy struct {
	allow []pattern
	deny  []pattern
}

type pattern struct {
	text  string
	parts []string // text split on '*'
}

// Compile checks spec and returns the policy it describes.
func Compile(spec Spec) (*Policy, error) {
	p := &Policy{}
	var err error
	if p.allow, err = compilePatterns("allow", spec.Allow); err != nil {
		return nil, err
	}
	if p.deny, err = compilePatterns("deny", spec.Deny); err != nil {
		return nil, err
	}
	return p, nil
}

func compilePatterns(list string, texts []string) ([]pattern, error) {
	out := make([]pattern, 0, len(texts))
	for i, t := range texts {
		if t == "" || strings.TrimSpace(t) != t {
			return nil, fmt.Errorf("%s[%d] %q: empty or padded: %w", list, i, t, ErrInvalidPattern)
		}
		out = append(out, pattern{text: t, parts: strings.Split(t, "*")})
	}
	return out, nil
}

// Decide returns the decision for in. It never panics and never returns an
// allow for a capability no allow pattern names.
func (p *Policy) Decide(in *Input) Decision {
	for _, d := range p.deny {
		if d.match(in.Capability) {
			return Decision{Effect: Deny, RuleID: "deny:" + d.text, Reason: fmt.Sprintf("capability %s matches deny pattern %q", in.Capability, d.text)}
		}
	}
	for _, a := range p.allow {
		if a.match(in.Capability) {
			return Decision{Effect: Allow, RuleID: "allow:" + a.text, Reason: fmt.Sprintf("capability %s matches allow pattern %q", in.Capability, a.text)}
		}
	}
	return Decision{Effect: Deny, RuleID: "default", Reason: fmt.Sprintf("no allow pattern matches capability %s", in.Capability)}
}

// match is a glob where '*' matches any run of characters (including '.' and ':').
func (p pattern) match(s string) bool {
	parts := p.parts
	if len(parts) == 1 {
		return s == parts[0]
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}
