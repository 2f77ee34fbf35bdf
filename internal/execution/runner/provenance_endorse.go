package runner

import (
	"context"
	"errors"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/execution/provtrace"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// The runner's side of endorsement (package provtrace holds the rest).

// Provenance implements toolkit.Approvals: the arguments step 5 traced
// (the declaration's own, once expanded).
func (a *approvals) Provenance(d *declarations.Declaration) []toolkit.ArgOrigin {
	if a.c.input == nil || a.c.traced == nil {
		return nil
	}
	return provtrace.NeedArguments(a.c.traced, a.c.input.Provenance)
}

// Endorse implements toolkit.Approvals: the person at the client, having
// answered this server's question about d, vouches for d's values.
func (a *approvals) Endorse(ctx context.Context, d *declarations.Declaration, reason string) error {
	if d.ContextID != a.c.s.contextID {
		// Get already refused another context's declaration; this is the
		// invariant restated where it is relied on.
		return violation.New(violation.ApprovalInvalid, "declaration %s is not in this context", d.ID)
	}
	r := a.c.s.r
	e := &provtrace.Endorser{DB: r.db, Hash: r.redactor.Hash, Now: r.now,
		Transport: a.c.s.transport, By: "elicitation:" + a.c.s.principal, Reason: reason}
	if _, err := e.Need(ctx, d); err != nil && !errors.Is(err, provtrace.ErrNothingToEndorse) {
		return violation.Wrap(violation.Unavailable, err, "the endorsement cannot be recorded")
	}
	return nil
}
