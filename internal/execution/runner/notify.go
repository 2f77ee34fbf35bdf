package runner

import (
	"context"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/execution/notify"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
)

// The notifier (package hooks) tells the configured webhooks and command
// hooks when a declared need waits for an operator and when one expires
// undecided.

// notifyPending tells the operators a declaration waits for them.
func (r *Runner) notifyPending(s *Session, p *toolkit.PendingApproval) {
	r.approvals.Waiting(p.DeclarationID, r.now().UTC())
	r.notifier.Load().Send(notify.Event{Event: notify.ApprovalPending, Time: r.now().UTC(), DeclarationID: p.DeclarationID,
		ContextID: s.contextID, Principal: s.principal, Operation: p.Operation, Target: p.Target, RuleID: p.RuleID,
		ExpiresAt: p.ExpiresAt, Hint: "airlock approvals approve " + p.DeclarationID + " --state DIR (or deny it with --reason)"})
}

// ExpireDeclarations moves every declaration or approval past its deadline
// to expired, audits each (with its declaration id, principal and
// context), and tells the webhooks of every decision that ran out.
func (r *Runner) ExpireDeclarations(ctx context.Context) int {
	moved, err := r.decls.ExpireDue(ctx)
	if err != nil {
		r.log.Error("expiring declarations", "err", err)
	}
	for _, d := range moved {
		undecided := d.State == declarations.StateDeclared
		if undecided {
			r.notifier.Load().Send(notify.Event{Event: notify.ApprovalExpired, Time: r.now().UTC(), DeclarationID: d.ID,
				ContextID: d.ContextID, Principal: d.Principal, Operation: string(d.Need.Operation), RuleID: d.RuleID, ExpiresAt: d.ExpiresAt})
		}
		rec := audit.DeclarationExpire(r.now().UTC(), audit.Expiry{ID: d.ID, ContextID: d.ContextID, Owner: d.Principal,
			State: string(d.State), ExpiresAt: d.ExpiresAt, Undecided: undecided})
		if err := r.db.Append(ctx, rec); err != nil {
			r.log.Error("auditing expiry", "declaration", d.ID, "err", err)
		}
	}
	return len(moved)
}
