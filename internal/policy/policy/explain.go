package policy

import (
	"fmt"
	"strings"
)

// Step kinds in an Explanation.
const (
	StepDenyPattern  = "deny-pattern"
	StepAllowPattern = "allow-pattern"
	StepNetwork      = "network"
	StepRule         = "rule"
	StepDefault      = "default"
)

// Explanation is everything a policy considered for one input: the
// decision Decide gives, and one step per pattern, network check and rule
// of every policy in the chain, each with whether it matched and why.
type Explanation struct {
	Policy   string   `json:"policy"`
	Chain    []string `json:"chain"`
	Decision Decision `json:"decision"`
	Steps    []Step   `json:"steps"`
	// Provenance is the provenance of the need's arguments the decision
	// was made over (none for a call without one).
	Provenance map[string]ArgProvenance `json:"provenance,omitempty"`
}

// Step is one thing the policy considered.
type Step struct {
	Policy  string `json:"policy"` // the policy in the chain the step belongs to
	Kind    string `json:"kind"`   // one of the Step* constants
	ID      string `json:"id"`     // pattern id or rule id
	Effect  Effect `json:"effect,omitempty"`
	Matched bool   `json:"matched"`
	Why     string `json:"why"`
	// UsesProvenance: a rule whose condition reads provenance; a deny it
	// decides is PROVENANCE_DENIED.
	UsesProvenance bool `json:"uses_provenance,omitempty"`
}

// Explain evaluates every pattern and rule of p's chain against in, without
// stopping at the first deny, and reports each with the decision. The
// decision is exactly Decide's; the steps show what Decide looked at and
// also what it skipped because an earlier step had already decided.
func Explain(p *Policy, in *Input) Explanation {
	if p == nil || in == nil {
		return Explanation{Decision: p.Decide(in)}
	}
	ex := Explanation{Policy: p.Name(), Chain: p.Chain(), Decision: p.Decide(in), Provenance: in.Provenance}
	c := in.Capability
	st := getState(p, in)
	defer putState(st)
	add := func(s Step) { ex.Steps = append(ex.Steps, s) }

	for _, l := range p.layers {
		for _, e := range l.deny {
			add(Step{Policy: l.name, Kind: StepDenyPattern, ID: e.id, Effect: Deny, Matched: e.pat.Match(c), Why: patternWhy(e.pat.String(), c, e.pat.Match(c))})
		}
	}
	for _, l := range p.layers {
		if l.neutral {
			add(Step{Policy: l.name, Kind: StepAllowPattern, Matched: true, Why: "no allows of its own: defers to its parent"})
			continue
		}
		for _, e := range l.allow {
			add(Step{Policy: l.name, Kind: StepAllowPattern, ID: e.id, Effect: Allow, Matched: e.pat.Match(c), Why: patternWhy(e.pat.String(), c, e.pat.Match(c))})
		}
	}
	switch {
	case !networked(c):
		add(Step{Kind: StepNetwork, ID: "network", Why: "not a comm.* or mcp.* capability: not checked"})
	case st.rawURL == "":
		add(Step{Kind: StepNetwork, ID: "network", Why: "the call names no URL: not checked"})
	default:
		u, err := st.url()
		if err == nil {
			err = p.net.check(u)
		}
		if err != nil {
			add(Step{Kind: StepNetwork, ID: "network", Effect: Deny, Matched: true, Why: err.Error()})
		} else {
			add(Step{Kind: StepNetwork, ID: "network", Matched: false, Why: "URL " + st.env.URL.Raw + " is allowed by the network section"})
		}
	}
	for _, l := range p.layers {
		for _, r := range l.rules {
			s := Step{Policy: l.name, Kind: StepRule, ID: r.id, Effect: r.effect, UsesProvenance: r.uses&usesProvenance != 0}
			if !r.cap.Match(c) {
				s.Why = patternWhy(r.cap.String(), c, false) + ": not evaluated"
				add(s)
				continue
			}
			switch ok, err := st.eval(r); {
			case err != nil:
				s.Matched, s.Effect = true, Deny
				s.Why = "condition failed to evaluate (counts as deny): " + firstLine(err)
			case r.prog == nil:
				s.Matched, s.Why = true, "no condition: always applies"
			case ok:
				s.Matched, s.Why = true, "condition true: "+r.when
			default:
				s.Why = "condition false: " + r.when
			}
			add(s)
		}
	}
	if ex.Decision.RuleID == "default" {
		add(Step{Kind: StepDefault, ID: "default", Effect: Deny, Matched: true, Why: ex.Decision.Reason})
	}
	return ex
}

func patternWhy(pat, c string, ok bool) string {
	if ok {
		return fmt.Sprintf("%q matches %q", pat, c)
	}
	return fmt.Sprintf("%q does not match %q", pat, c)
}

// String renders the explanation as text for a terminal.
func (ex Explanation) String() string {
	var b strings.Builder
	name := ex.Policy
	if name == "" {
		name = "(unnamed)"
	}
	fmt.Fprintf(&b, "policy %s (chain %s)\n", name, strings.Join(ex.Chain, " > "))
	fmt.Fprintf(&b, "decision: %s by %s: %s\n", ex.Decision.Effect, ex.Decision.RuleID, ex.Decision.Reason)
	b.WriteString(provenanceLines(ex.Provenance))
	for _, s := range ex.Steps {
		mark := "  "
		if s.Matched {
			mark = "✓ "
		}
		id := s.ID
		if s.Policy != "" {
			id = s.Policy + "/" + id
		}
		why := s.Why
		if s.UsesProvenance {
			why += " [reads provenance]"
		}
		fmt.Fprintf(&b, "%s%-14s %-32s %-16s %s\n", mark, s.Kind, id, s.Effect, why)
	}
	return b.String()
}
