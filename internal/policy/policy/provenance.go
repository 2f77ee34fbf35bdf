package policy

import (
	"fmt"
	"slices"
	"strings"
)

// Provenance in conditions (issue 22). For a declare_need, the runner
// traces each argument of the need — the upstream tool's arguments of a
// comm.mcp need, the url of a comm.fetch, the query of a comm.search or
// comm.query — against what the context was given by the principal's side
// (trusted inputs, trusted pools), what it has handed the agent
// (labelled content) and what an approver endorsed, and puts the result
// on [Input.Provenance]. A condition reads it as:
//
//	provenance            map[string]ArgProvenance, keyed by argument name
//	                      (nested ones joined with "."): provenance.recipient,
//	                      provenance["items.0.iban"]
//	provenance.X.origin   "trusted" | "endorsed" | "untrusted" | "agent", and
//	                      "" when X is absent or was not traced
//	provenance.X.sources  []string: the ids of the content it matched
//	                      (attribution ids, pool:…, task, endorsement:…)
//	provenance.X.readers  []string: who may see where it came from; nil is public
//	provenance.X.public   bool: readers is nil
//	provenance.X.kind     what the value looks like (iban, email, url, …)
//	trusted_args, endorsed_args, untrusted_args, agent_args
//	                      []string: the argument names of each origin, sorted
//
// A missing argument reads as the zero ArgProvenance (origin ""), never an
// error: `provenance.recipient.origin == "untrusted"` is simply false for a
// call without a recipient, so it cannot deny spuriously; and a rule that
// must see a trusted value says so (`provenance.recipient.origin not in
// ["trusted", "endorsed"]`), which also holds when nothing was traced
// (fail closed). A misspelt field (provenance.recipient.orign) fails the
// load like any unknown identifier.
//
// A deny decided by a rule whose condition reads provenance is refused with
// the violation code PROVENANCE_DENIED instead of POLICY_DENIED
// ([Policy.UsesProvenance]), so an agent and an operator can tell "this
// value came from the wrong place" from "this call is not allowed".

// The origins of an argument, from the most to the least trusted.
const (
	OriginTrusted   = "trusted"   // the whole value is in a trusted input (the task, a trusted pool)
	OriginEndorsed  = "endorsed"  // an approver vouched for this value in this context
	OriginUntrusted = "untrusted" // some part of it came from content Airlock fenced as untrusted
	OriginAgent     = "agent"     // found nowhere: the agent wrote it
)

// ArgProvenance is where one argument's value came from.
type ArgProvenance struct {
	Origin  string   `json:"origin" expr:"origin" jsonschema:"enum=trusted,enum=endorsed,enum=untrusted,enum=agent"`
	Sources []string `json:"sources,omitempty" expr:"sources" jsonschema:"description=Ids of the content the value matched."`
	Readers []string `json:"readers,omitempty" expr:"readers" jsonschema:"description=Who may see where it came from; absent means public."`
	Public  bool     `json:"-" expr:"public"` // Readers is nil; set by the runner and by test cases
	Kind    string   `json:"kind,omitempty" expr:"kind" jsonschema:"description=What the value looks like: iban, email, url, host, phone, amount, date, text, ..."`
}

// provenanceIdents are the identifiers that read provenance; a rule that
// uses one is a provenance rule (usesProvenance).
var provenanceIdents = []string{"provenance", "trusted_args", "endorsed_args", "untrusted_args", "agent_args"}

// argsByOrigin lists the names of the arguments of one origin, sorted.
func argsByOrigin(p map[string]ArgProvenance, origin string) []string {
	var out []string
	for name, a := range p {
		if a.Origin == origin {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// fillProvenance sets the provenance identifiers of env from in; only
// called when some rule reads them.
func (e *Env) fillProvenance(p map[string]ArgProvenance) {
	e.Provenance = make(map[string]ArgProvenance, len(p))
	for name, a := range p {
		a.Public = a.Readers == nil
		e.Provenance[name] = a
	}
	e.TrustedArgs = argsByOrigin(p, OriginTrusted)
	e.EndorsedArgs = argsByOrigin(p, OriginEndorsed)
	e.UntrustedArgs = argsByOrigin(p, OriginUntrusted)
	e.AgentArgs = argsByOrigin(p, OriginAgent)
}

// UsesProvenance reports whether the rule with this id, anywhere in p's
// chain, has a condition that reads provenance: a deny it decides is a
// provenance refusal (PROVENANCE_DENIED).
func (p *Policy) UsesProvenance(ruleID string) bool {
	if p == nil {
		return false
	}
	for _, l := range p.layers {
		for _, r := range l.rules {
			if r.id == ruleID {
				return r.uses&usesProvenance != 0
			}
		}
	}
	return false
}

// checkProvenance refuses provenance a test case states that no trace
// could give: an unknown origin.
func checkProvenance(p map[string]ArgProvenance) error {
	for name, a := range p {
		switch a.Origin {
		case OriginTrusted, OriginEndorsed, OriginUntrusted, OriginAgent:
		default:
			return fmt.Errorf("provenance of %q: origin %q: want trusted, endorsed, untrusted or agent: %w", name, a.Origin, ErrInvalidCase)
		}
	}
	return nil
}

// provenanceLines renders the provenance of an explanation, one argument a
// line, sorted by name.
func provenanceLines(p map[string]ArgProvenance) string {
	if len(p) == 0 {
		return ""
	}
	names := make([]string, 0, len(p))
	for n := range p {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("provenance:\n")
	for _, n := range names {
		a := p[n]
		fmt.Fprintf(&b, "  %-20s %-9s", n, a.Origin)
		if a.Kind != "" {
			fmt.Fprintf(&b, " kind %s", a.Kind)
		}
		if len(a.Sources) > 0 {
			fmt.Fprintf(&b, " from %s", strings.Join(a.Sources, ", "))
		}
		if a.Readers != nil {
			fmt.Fprintf(&b, " readers [%s]", strings.Join(a.Readers, ", "))
		}
		b.WriteString("\n")
	}
	return b.String()
}
