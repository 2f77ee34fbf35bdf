package runner

import (
	"context"
	"reflect"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/hooks"
	"github.com/airlock-dev/airlock/internal/execution/notify"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
)

// The notifier tells the configured webhooks and command hooks (run in the
// sandbox: package hooks) when a declared need waits for an operator and
// when one expires undecided (package notify). It is a process's delivery
// queues, rebuilt when a reload changes the notifications section.

// newNotifier is cfg's notifier (package hooks): nil with no webhook and no
// command hook.
func (r *Runner) newNotifier(cfg *config.Config) *notify.Notifier {
	return hooks.Notifier(cfg, &hooks.Options{Logger: r.log, SandboxTrampoline: r.trampoline, OnOutcome: r.metrics.Notification})
}

// reloadNotifier swaps the notifier when the webhooks changed.
func (r *Runner) reloadNotifier(old, cfg *config.Config) {
	if reflect.DeepEqual(old.Notify, cfg.Notify) {
		return
	}
	prev := r.notifier.Swap(r.newNotifier(cfg))
	go prev.Close() // delivers what it had queued
}

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
