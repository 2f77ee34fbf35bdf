package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/internal/policy/policy"
	"github.com/airlock-dev/airlock/internal/provenance"
	"github.com/airlock-dev/airlock/store"
	"github.com/airlock-dev/airlock/tools"
)

// A child context traces against its ancestors too (issue 22): a child an
// orchestrator created under a parent whose task was given sees that task
// as trusted, and content labelled in the parent as seen (untrusted stays
// untrusted: what the parent's agent read may have reached the child's
// through the orchestrator). Endorsements are the exception: each binds
// one context only, so a value vouched for in the parent is not endorsed
// in the child, nor the other way (TestEndorsementSingleContext). An
// ancestor's sources are named "<context id>/<source>" so a record says
// where a value came from.

// chainProvenance reads the provenance of a context and of each ancestor
// (ids, the context first) into one: the context's own rows as stored,
// each ancestor's trusted inputs and labelled content under its prefix.
func chainProvenance(ctx context.Context, db *store.DB, ids []string) (*store.Provenance, error) {
	if len(ids) == 0 {
		return nil, errors.New("no context")
	}
	out, err := db.ContextProvenance(ctx, ids[0])
	if err != nil {
		return nil, err
	}
	for _, id := range ids[1:] {
		p, err := db.ContextProvenance(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("ancestor %s: %w", id, err)
		}
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

// chainIDs are the ids of a loaded context chain, the context first.
func chainIDs(chain []*contexts.Context) []string {
	ids := make([]string, len(chain))
	for i, cx := range chain {
		ids[i] = cx.ID
	}
	return ids
}

// ancestry walks a context's parents in the store (the operator's side,
// which has no loaded chain), bounded as contextChain is.
func ancestry(ctx context.Context, db *store.DB, id string) ([]string, error) {
	var ids []string
	for next := id; next != ""; {
		if len(ids) == maxChain {
			return nil, fmt.Errorf("context %s nests deeper than %d", id, maxChain)
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

// NeedArgument is one traced argument of a declared need, as an approver
// is shown it (toolkit.ArgOrigin.Line quotes it).
type NeedArgument = toolkit.ArgOrigin

// traceArgs traces a need's values against a context's provenance.
func traceArgs(p *store.Provenance, a *tools.DeclareNeedArgs) ([]provenance.Argument, map[string]policy.ArgProvenance) {
	values, ok := tracedValues(a)
	if !ok {
		return nil, nil
	}
	traced := provenance.NewIndex(indexSources(p), nil).Trace(values)
	out := make(map[string]policy.ArgProvenance, len(traced))
	for _, t := range traced {
		out[argName(t.Path)] = argProvenance(t, p.EvictedUntrusted)
	}
	return traced, out
}

// needArguments joins the matcher's arguments with the policy's view.
func needArguments(traced []provenance.Argument, view map[string]policy.ArgProvenance) []NeedArgument {
	out := make([]NeedArgument, 0, len(traced))
	for _, t := range traced {
		name := argName(t.Path)
		a := view[name]
		out = append(out, NeedArgument{Name: name, Value: t.Value, Origin: a.Origin, Kind: a.Kind, Sources: a.Sources, Truncated: t.Truncated})
	}
	return out
}

// NeedProvenance recomputes the provenance of a declaration's arguments
// from the store (its context and the context's ancestors), as the
// approval question shows it. A need with nothing to trace has none.
func (o *Operator) NeedProvenance(ctx context.Context, d *Declaration) ([]NeedArgument, error) {
	ids, err := ancestry(ctx, o.db, d.ContextID)
	if err != nil {
		return nil, fmt.Errorf("declaration %s: %w", d.ID, err)
	}
	p, err := chainProvenance(ctx, o.db, ids)
	if err != nil {
		return nil, fmt.Errorf("declaration %s: %w", d.ID, err)
	}
	return needArguments(traceArgs(p, declarationArgs(d))), nil
}

// declarationArgs is a stored need as declare_need's arguments.
func declarationArgs(d *Declaration) *tools.DeclareNeedArgs {
	params := d.Need.Parameters
	return &tools.DeclareNeedArgs{Operation: d.Need.Operation, Parameters: &params}
}
