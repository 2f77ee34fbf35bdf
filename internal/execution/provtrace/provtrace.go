// Package provtrace is the store's side of provenance at the boundary
// (issue 22), shared by the runner (a need traced at step 5, the person at
// the client endorsing) and the operator's API (the approval question,
// endorsement on the operator's word): reading a context's provenance and
// its ancestors', tracing a need's values against it with the matcher
// (package provenance), and recording endorsements.
//
// The invariants it keeps are the ones both sides rely on, so they are
// written once: an ancestor's trusted inputs and labels count for a child
// but its endorsements never do (each binds one context,
// TestEndorsementSingleContext); a value is "endorsed" only when nothing
// but endorsements explains it; and a context that evicted untrusted text
// treats what it cannot explain as untrusted, never as the agent's own.
package provtrace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/policy/policy"
	"github.com/airlock-dev/airlock/internal/provenance"
	"github.com/airlock-dev/airlock/store"
)

// MaxChain bounds how deep child contexts nest: the runner's walk of a
// loaded chain and Ancestry stop at the same depth.
const MaxChain = 8

// MaxSources bounds the sources named per argument.
const MaxSources = 8

// EndorsementPrefix starts the source id of an endorsement.
const EndorsementPrefix = "endorsement:"

// Chain reads the provenance of a context and of each ancestor (ids, the
// context first) into one: the context's own rows as stored, each
// ancestor's trusted inputs and labelled content under the prefix
// "<context id>/", and none of an ancestor's endorsements.
func Chain(ctx context.Context, db *store.DB, ids []string) (*store.Provenance, error) {
	if len(ids) == 0 {
		return nil, errors.New("no context")
	}
	ps, err := db.ChainProvenance(ctx, ids) // one snapshot of the whole chain
	if err != nil {
		return nil, err
	}
	out := ps[0]
	for i, id := range ids[1:] {
		p := ps[i+1]
		for _, in := range p.Inputs {
			cp := *in
			cp.ID = id + "/" + in.ID
			out.Inputs = append(out.Inputs, &cp)
		}
		for _, l := range p.Content {
			cp := *l
			cp.Source = id + "/" + l.Source
			out.Content = append(out.Content, &cp)
		}
		out.EvictedUntrusted = out.EvictedUntrusted || p.EvictedUntrusted
	}
	return out, nil
}

// Ancestry walks a context's parents in the store (for a caller without a
// loaded chain), the context first, bounded by MaxChain.
func Ancestry(ctx context.Context, db *store.DB, id string) ([]string, error) {
	var ids []string
	for next := id; next != ""; {
		if len(ids) == MaxChain {
			return nil, fmt.Errorf("context %s nests deeper than %d", id, MaxChain)
		}
		cx, err := db.GetContext(ctx, next)
		if err != nil {
			return nil, err
		}
		ids = append(ids, cx.ID)
		next = cx.Parent
	}
	return ids, nil
}

// Values are the values of a need that the agent chose and that leave
// Airlock: the upstream tool's arguments, the URL, the query. ok is false
// for a need with nothing to trace.
func Values(op declarations.Operation, p *declarations.Parameters) (v any, ok bool) {
	if p == nil {
		return nil, false
	}
	switch op {
	case declarations.OpMCP:
		if len(p.Arguments) == 0 || json.Unmarshal(p.Arguments, &v) != nil {
			return nil, false
		}
		return v, true
	case declarations.OpFetch:
		return map[string]any{"url": p.URL}, true
	case declarations.OpSearch, declarations.OpQuery:
		return map[string]any{"query": p.Query}, true
	}
	return nil, false
}

// Traced reports whether a need has values to trace (Values).
func Traced(op declarations.Operation, p *declarations.Parameters) bool {
	_, ok := Values(op, p)
	return ok
}

// Trace traces a need's values against a context's provenance: the
// matcher's arguments and the policy's view of each, by argument name.
// The index is built with memo's analyses of the texts it already saw (a
// nil memo analyses all): the same index, field for field
// (provenance.Memo).
func Trace(p *store.Provenance, op declarations.Operation, params *declarations.Parameters, memo *provenance.Memo) ([]provenance.Argument, map[string]policy.ArgProvenance) {
	values, ok := Values(op, params)
	if !ok {
		return nil, nil
	}
	traced := memo.NewIndex(Sources(p), nil).Trace(values)
	out := make(map[string]policy.ArgProvenance, len(traced))
	for _, t := range traced {
		out[ArgName(t.Path)] = ArgProvenance(t, p.EvictedUntrusted)
	}
	return traced, out
}

// Sources turns a context's provenance into the matcher's sources:
// trusted inputs and endorsements are trusted, content as labelled.
func Sources(p *store.Provenance) []provenance.Source {
	var out []provenance.Source
	for _, in := range p.Inputs {
		out = append(out, provenance.Source{ID: in.ID, Integrity: provenance.Trusted, Readers: in.Readers, Text: in.Text})
	}
	for _, e := range p.Endorsements {
		out = append(out, provenance.Source{ID: EndorsementPrefix + e.ID, Integrity: provenance.Trusted, Text: e.Value})
	}
	for _, l := range p.Content {
		if l.Evicted {
			continue
		}
		integrity := provenance.Untrusted
		if l.Integrity == store.IntegrityTrusted {
			integrity = provenance.Trusted
		}
		out = append(out, provenance.Source{ID: l.Source, Integrity: integrity, Readers: l.Readers, Text: l.Text})
	}
	return out
}

// ArgProvenance is the policy's view of one traced argument: endorsed
// when only endorsements explain a trusted value; untrusted, not agent,
// when the context evicted untrusted text (it might have come from it).
func ArgProvenance(t provenance.Argument, evictedUntrusted bool) policy.ArgProvenance {
	a := policy.ArgProvenance{Origin: string(t.Origin), Kind: string(t.Kind), Readers: t.Readers}
	endorsed, principal := false, false
	for _, m := range t.Matches {
		if len(a.Sources) < MaxSources && !slices.Contains(a.Sources, m.Source) {
			a.Sources = append(a.Sources, m.Source)
		}
		if m.How == provenance.HowExact && m.Integrity == provenance.Trusted {
			if strings.HasPrefix(m.Source, EndorsementPrefix) {
				endorsed = true
			} else {
				principal = true
			}
		}
	}
	switch {
	case t.Origin == provenance.OriginTrusted && endorsed && !principal:
		a.Origin = policy.OriginEndorsed
	case t.Origin == provenance.OriginAgent && evictedUntrusted:
		a.Origin = policy.OriginUntrusted
		a.Sources = append(a.Sources, "evicted")
	}
	return a
}

// ArgName is a JSON pointer as a policy names it: "/recipient" is
// "recipient", "/items/0/iban" is "items.0.iban".
func ArgName(pointer string) string {
	parts := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	for i, p := range parts {
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
	}
	return strings.Join(parts, ".")
}

// NeedArguments joins the matcher's arguments with the policy's view, as
// an approver is shown them (toolkit.ArgOrigin.Line quotes them).
func NeedArguments(traced []provenance.Argument, view map[string]policy.ArgProvenance) []toolkit.ArgOrigin {
	out := make([]toolkit.ArgOrigin, 0, len(traced))
	for _, t := range traced {
		name := ArgName(t.Path)
		a := view[name]
		out = append(out, toolkit.ArgOrigin{Name: name, Value: t.Value, Origin: a.Origin, Kind: a.Kind, Sources: a.Sources, Truncated: t.Truncated})
	}
	return out
}

// Need recomputes the provenance of a declaration's arguments from the
// store (its context and the context's ancestors).
func Need(ctx context.Context, db *store.DB, d *declarations.Declaration) ([]toolkit.ArgOrigin, error) {
	ids, err := Ancestry(ctx, db, d.ContextID)
	if err != nil {
		return nil, fmt.Errorf("declaration %s: %w", d.ID, err)
	}
	p, err := Chain(ctx, db, ids)
	if err != nil {
		return nil, fmt.Errorf("declaration %s: %w", d.ID, err)
	}
	params := d.Need.Parameters
	return NeedArguments(Trace(p, d.Need.Operation, &params, nil)), nil
}
