package policy

import (
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/capability"
)

// checkAllowsNarrow refuses a child layer whose allows reach beyond its
// parent's. The parent's allowable capabilities are those of its nearest
// layer that is not neutral (a neutral layer defers to its ancestors, and
// each non-neutral layer was itself checked against its parent when it was
// compiled, so the nearest one bounds the whole chain). Both allow patterns
// and allow-rule capabilities count on either side: at run time the
// parent's decision still applies, so an allow the parent grants only
// under a condition stays conditional in the child.
//
// The check is for the author's benefit: evaluation already makes the
// child's decision at least as strict as its parent's (see doc.go), so a
// widening allow would be dead text that misleads its reader. Refusing it
// with a line number says so.
func checkAllowsNarrow(parent *Policy, child *layer) error {
	bound := parent.allowBound()
	for i, e := range child.allow {
		if !coveredBy(e.pat, bound) {
			return &FieldError{Policy: child.name, Field: fmt.Sprintf(".allow[%d]", i),
				Err: fmt.Errorf("%q is not within any allow of %s (%s): %w", e.pat, quoteName(parent.name), patternList(bound), ErrWidens)}
		}
	}
	for i, r := range child.rules {
		if r.effect == Allow && !coveredBy(r.cap, bound) {
			return &FieldError{Policy: child.name, Field: fmt.Sprintf(".rules[%d].capability", i),
				Err: fmt.Errorf("allow rule %q capability %q is not within any allow of %s (%s): %w", r.id, r.cap, quoteName(parent.name), patternList(bound), ErrWidens)}
		}
	}
	return nil
}

// allowBound returns the capability patterns the policy's nearest
// non-neutral layer can allow.
func (p *Policy) allowBound() []capability.Pattern {
	for i := len(p.layers) - 1; i >= 0; i-- {
		l := p.layers[i]
		if l.neutral {
			continue
		}
		var out []capability.Pattern
		for _, e := range l.allow {
			out = append(out, e.pat)
		}
		for _, r := range l.rules {
			if r.effect == Allow {
				out = append(out, r.cap)
			}
		}
		return out
	}
	return nil
}

func coveredBy(q capability.Pattern, bound []capability.Pattern) bool {
	for _, p := range bound {
		if p.Covers(q) {
			return true
		}
	}
	return false
}

func patternList(ps []capability.Pattern) string {
	if len(ps) == 0 {
		return "it allows nothing"
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return "allows " + strings.Join(s, ", ")
}

func quoteName(name string) string {
	if name == "" {
		return "the parent"
	}
	return "parent " + fmt.Sprintf("%q", name)
}
