package policy

import (
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/internal/kit/yamlfile"
	"github.com/airlock-dev/airlock/internal/policy/limits"
)

// ErrUnreachableRule: a rule that can never fire. Decide judges deny
// patterns and "does every policy in the chain allow the capability?"
// before any rule (rows 1 and 2 of the order), so a rule whose capability a
// deny pattern covers, or that no allow pattern or allow rule of some
// policy in the chain can let through, never decides anything: a
// `require_approval` on a capability nothing allows reads as "needs a
// person" and is in fact a plain deny (issue 24 item 7).
var ErrUnreachableRule = errors.New("rule can never fire")

// Unreachable is a rule that can never fire, in the policy that declares
// it, with why.
type Unreachable struct {
	RuleRef
	Index int    // in the policy's rules
	Why   string // which deny pattern, or which policy allows none of it
}

// UnreachableRules lists every rule of s's policies that can never fire
// through the chain of the policy that declares it: a deny pattern of that
// chain covers its capability pattern, or a policy of the chain that is
// not neutral has no allow pattern and no allow rule sharing a capability
// with it. Both tests are exact for one pattern at a time
// (capability.Pattern.Covers and Overlaps); a rule denied only by several
// deny patterns together, or allowed by different policies for different
// capabilities, is not reported (never a false alarm).
func (s *Set) UnreachableRules() []Unreachable {
	var out []Unreachable
	for _, name := range s.Names() {
		p, _ := s.Get(name)
		if p == nil || len(p.layers) == 0 {
			continue
		}
		own := p.layers[len(p.layers)-1]
		for i, r := range own.rules {
			if why := p.unreachable(r); why != "" {
				out = append(out, Unreachable{RuleRef: RuleRef{Policy: name, Kind: StepRule, ID: r.id}, Index: i, Why: why})
			}
		}
	}
	return out
}

// unreachable says why r can never fire in p's chain, or "".
func (p *Policy) unreachable(r *rule) string {
	what := r.cap.String()
	if !r.cap.Literal() {
		what = "any capability " + what + " matches"
	}
	for _, l := range p.layers {
		for _, e := range l.deny {
			if e.pat.Covers(r.cap) {
				return fmt.Sprintf("deny pattern %q%s denies %s, and deny patterns are judged before rules", e.pat, ofPolicy(l.name), what)
			}
		}
	}
	for _, l := range p.layers {
		if l.neutral || l.allowsSome(r) {
			continue
		}
		return fmt.Sprintf("no allow pattern or allow rule%s allows %s, so its calls are denied by default before rules are judged (allow it, or drop the rule)", ofPolicy(l.name), what)
	}
	return ""
}

// allowsSome reports whether an allow pattern or an allow rule of l can
// match a capability r's pattern matches.
func (l *layer) allowsSome(r *rule) bool {
	for _, e := range l.allow {
		if e.pat.Overlaps(r.cap) {
			return true
		}
	}
	for _, a := range l.rules {
		if a.effect == Allow && a.cap.Overlaps(r.cap) {
			return true
		}
	}
	return false
}

// CheckReachable reports, with file:line (name, data: the file s was
// compiled from), every rule of s that can never fire (ErrUnreachableRule).
// `airlock policy check` and `airlock config check` make this check, as
// they do CheckCapabilities; Compile does not, so a server still starts.
func CheckReachable(name string, data []byte, s *Set) error {
	var errs []error
	for _, u := range s.UnreachableRules() {
		path := fmt.Sprintf("$.policies%s.rules[%d].capability", limits.Key(u.Policy), u.Index)
		errs = append(errs, yamlfile.At(name, data, path, fmt.Errorf("rule %q: %s: %w", u.ID, u.Why, ErrUnreachableRule)))
	}
	return errors.Join(errs...)
}
