package operator

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// Declaration is a declared need and where it stands.
type Declaration = declarations.Declaration

// Approvals lists declarations, oldest first: those waiting for a decision,
// or with all set, every one.
func (o *API) Approvals(ctx context.Context, all bool) ([]*Declaration, error) {
	f := declarations.Filter{States: []declarations.State{declarations.StateDeclared}}
	if all {
		f.States = nil
	}
	return o.db.Declarations().List(ctx, f)
}

// Approve approves a declared need on the operator's word; the agent then
// collects it with declare_need and its declaration_id. The approval is
// single-use and expires after the default approval TTL.
func (o *API) Approve(ctx context.Context, id, by, reason string) (*Declaration, error) {
	return o.decide(ctx, id, by, reason, true)
}

// Deny refuses a declared need; reason is shown to the agent.
func (o *API) Deny(ctx context.Context, id, by, reason string) (*Declaration, error) {
	return o.decide(ctx, id, by, reason, false)
}

func (o *API) decide(ctx context.Context, id, by, reason string, approve bool) (*Declaration, error) {
	// The serving processes time this decision (their sweep finds it:
	// package approvallatency); this process has no scraped registry.
	m := declarations.NewManager(o.db.Declarations(), &declarations.ManagerOptions{Now: o.now})
	who := "operator:" + by
	var (
		d   *Declaration
		err error
	)
	if approve {
		d, err = m.Approve(ctx, id, who, reason)
	} else {
		d, err = m.Deny(ctx, id, who, reason)
	}
	var contextID string
	if d != nil {
		contextID = d.ContextID
	}
	record := audit.Deny
	if approve {
		record = audit.Approve
	}
	rec := record(o.now().UTC(), o.operator(by), id, contextID, reason, err)
	if aerr := o.db.Append(ctx, rec); aerr != nil {
		return nil, fmt.Errorf("auditing the decision: %w", aerr)
	}
	if err != nil {
		return nil, fmt.Errorf("declaration %s: %w", id, err)
	}
	return d, nil
}
