package policy

import (
	"fmt"
	"net/url"
	"strings"
)

// Decision is the result of [Policy.Decide]: the effect, the pattern or rule
// that decided it and a reason an operator can read in the audit trail.
type Decision struct {
	Effect Effect `json:"effect"`
	// RuleID names what decided: "deny:<pattern>", "allow:<pattern>", a
	// rule's id, "network" (the network section refused the URL) or
	// "default" (nothing allowed the capability).
	RuleID string `json:"rule_id"`
	Reason string `json:"reason"`
	// Matched lists, in evaluation order, the ids of the patterns and rules
	// that matched, as far as evaluation went (a deny ends it). It may share
	// its backing array with other decisions: do not modify it.
	Matched []string `json:"matched,omitempty"`
}

// Decide returns the decision for in. It never panics and never returns an
// allow for a capability that no allow pattern or allow rule of every
// policy in the chain grants; see the package documentation for the order.
func (p *Policy) Decide(in *Input) Decision {
	if p == nil || in == nil {
		return Decision{Effect: Deny, RuleID: "default", Reason: "no policy or no input"}
	}
	c := in.Capability
	var m matches

	// 1. Deny patterns, root first: a deny anywhere in the chain wins.
	for _, l := range p.layers {
		for i := range l.deny {
			if e := &l.deny[i]; e.pat.Match(c) {
				return Decision{Effect: Deny, RuleID: e.id, Reason: e.reason, Matched: e.matched}
			}
		}
	}
	// 2. Every non-neutral layer must be able to allow the capability, by a
	// pattern or by an allow rule for it; if one cannot, the answer is the
	// default deny whatever the conditions say, so none is evaluated and
	// arguments of a call that cannot be allowed never reach expr.
	for _, l := range p.layers {
		if l.neutral {
			continue
		}
		if e := l.allowPattern(c); e != nil {
			m.add(e.id, e.matched)
			continue
		}
		if !l.hasAllowRule(c) {
			return m.decision(Deny, "default", l.dflt)
		}
	}

	// Pattern-only policies decide the other capabilities without touching
	// the pooled evaluation state.
	comm := networked(c)
	if !comm && !p.hasRules {
		id, reason, ok := p.allowedBy(c, nil, nil)
		if !ok {
			return m.decision(Deny, id, reason)
		}
		return m.decision(Allow, id, reason)
	}
	st := getState(p, in)
	defer putState(st)

	// 3. The network section, for comm.* calls that name a URL and mcp.*
	// calls to an HTTP upstream (the runner passes its URL).
	if comm && st.rawURL != "" {
		u, err := st.url()
		if err == nil {
			err = p.net.check(u)
		}
		if err != nil {
			return m.decision(Deny, "network", "network: "+err.Error())
		}
	}

	// 4. Rules, root first and in file order. A deny or an evaluation error
	// ends the decision; require_approval and allow are remembered.
	var approval *rule
	var allowedByRule [maxLayers]*rule
	for li, l := range p.layers {
		for _, r := range l.rules {
			if !r.cap.Match(c) {
				continue
			}
			ok, err := st.eval(r)
			if err != nil {
				m.add(r.id, r.matched)
				return m.decision(Deny, r.id, fmt.Sprintf("rule %q%s: condition failed to evaluate, denying: %s", r.id, ofPolicy(l.name), firstLine(err)))
			}
			if !ok {
				continue
			}
			m.add(r.id, r.matched)
			switch r.effect {
			case Deny:
				return m.decision(Deny, r.id, r.reason)
			case RequireApproval:
				if approval == nil {
					approval = r
				}
			case Allow:
				if li < maxLayers && allowedByRule[li] == nil {
					allowedByRule[li] = r
				}
			}
		}
	}

	id, reason, ok := p.allowedBy(c, st, &allowedByRule)
	switch {
	case !ok:
		return m.decision(Deny, id, reason)
	case approval != nil:
		return m.decision(RequireApproval, approval.id, approval.reason)
	}
	return m.decision(Allow, id, reason)
}

// allowedBy is step 5: every non-neutral layer must have allowed, by a
// pattern or by an allow rule whose condition held (byRule, indexed by
// layer; nil when no rule was evaluated). It returns the leaf-most allow,
// or ok false with the default deny of the first layer that did not allow.
func (p *Policy) allowedBy(c string, st *state, byRule *[maxLayers]*rule) (id, reason string, ok bool) {
	for li, l := range p.layers {
		if l.neutral {
			continue
		}
		e := l.allowPattern(c)
		var r *rule
		switch {
		case e != nil || byRule == nil:
		case li < maxLayers:
			r = byRule[li]
		default:
			// Chains deeper than maxLayers are rare; re-evaluate rather
			// than grow the array.
			r = l.allowRuleHeld(st, c)
		}
		switch {
		case e != nil:
			id, reason = e.id, e.reason
		case r != nil:
			id, reason = r.id, r.reason
		default:
			return "default", l.dflt, false
		}
	}
	return id, reason, true
}

// networked reports whether the network section judges capability c when
// the call names a URL: comm.* (fetch, search) and mcp.* (an HTTP
// upstream, whose URL the runner puts in Input.URL, so an upstream's host
// is refused by the same allow/deny as a fetch: issue 15,
// TestUpstreamHTTPUnderNetworkPolicy).
func networked(c string) bool {
	return strings.HasPrefix(c, "comm.") || strings.HasPrefix(c, "mcp.")
}

// Listable reports whether capability c could be allowed by some call:
// no deny pattern of the chain matches it, and every policy in the chain
// has an allow pattern or an allow rule for it (rows 1 and 2 of the
// order; conditions, which depend on a call's arguments, are not
// evaluated). When u is not nil it is the URL every call of c reaches (an
// HTTP upstream's), and the network section must allow it too (row 3).
// declare_need's catalog lists an upstream tool only when it is listable
// by the caller's policy: a tool the policy denies outright is not
// advertised (issue 15).
func (p *Policy) Listable(c string, u *url.URL) bool {
	if p == nil {
		return false
	}
	for _, l := range p.layers {
		for i := range l.deny {
			if l.deny[i].pat.Match(c) {
				return false
			}
		}
	}
	for _, l := range p.layers {
		if !l.neutral && l.allowPattern(c) == nil && !l.hasAllowRule(c) {
			return false
		}
	}
	return u == nil || p.net.check(u) == nil
}

// maxLayers is how deep a chain Decide tracks without allocating.
const maxLayers = 8

func (l *layer) allowPattern(c string) *entry {
	for i := range l.allow {
		if l.allow[i].pat.Match(c) {
			return &l.allow[i]
		}
	}
	return nil
}

func (l *layer) hasAllowRule(c string) bool {
	for _, r := range l.rules {
		if r.effect == Allow && r.cap.Match(c) {
			return true
		}
	}
	return false
}

func (l *layer) allowRuleHeld(st *state, c string) *rule {
	for _, r := range l.rules {
		if r.effect == Allow && r.cap.Match(c) {
			if ok, err := st.eval(r); err == nil && ok {
				return r
			}
		}
	}
	return nil
}

// eval runs a rule's condition. Anything but a bool result is an error,
// which the caller turns into a deny.
func (st *state) eval(r *rule) (bool, error) {
	if r.prog == nil {
		return true, nil
	}
	if r.uses&usesURL != 0 {
		// A URL that does not parse leaves url.host and friends empty and
		// url.raw set; the condition decides what that means.
		_, _ = st.url()
	}
	out, err := st.vm.Run(r.prog, &st.env)
	if err != nil {
		return false, err
	}
	b, ok := out.(bool)
	if !ok {
		return false, fmt.Errorf("condition returned %T, not bool", out)
	}
	return b, nil
}

// matches collects Matched without allocating for the common case of a
// single match, whose precomputed one-element slice is reused.
type matches struct {
	n      int
	single []string
	buf    [8]string
	more   []string
}

func (m *matches) add(id string, single []string) {
	if m.n < len(m.buf) {
		m.buf[m.n] = id
	} else {
		if m.more == nil {
			m.more = append([]string(nil), m.buf[:]...)
		}
		m.more = append(m.more, id)
	}
	m.n++
	m.single = single
}

func (m *matches) decision(e Effect, id, reason string) Decision {
	d := Decision{Effect: e, RuleID: id, Reason: reason}
	switch {
	case m.n == 0:
	case m.n == 1:
		d.Matched = m.single
	case m.more != nil:
		d.Matched = m.more
	default:
		d.Matched = append([]string(nil), m.buf[:m.n]...)
	}
	return d
}

// firstLine keeps an expr error to its message: the source snippet and
// caret that follow are for a terminal, not an audit record.
func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}
