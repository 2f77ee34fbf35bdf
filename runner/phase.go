package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/phasegate"
	"github.com/airlock-dev/airlock/store"
)

// phasePollInterval is how soon a running server applies a phase an
// operator set from another process.
const phasePollInterval = time.Second

// SetPhase moves a session to planning or execution on the operator's word
// (the agent never can). A server holding the session applies it within a
// second; both the order and its application are audited.
func (o *Operator) SetPhase(ctx context.Context, sessionID, phase, by, reason string) error {
	if phase != phasegate.Planning && phase != phasegate.Execution {
		return fmt.Errorf("phase %q: %w", phase, phasegate.ErrUnknownPhase)
	}
	err := o.db.SetSessionPhase(ctx, sessionID, phase, by, reason)
	rec := &store.Record{
		Time: o.now().UTC(), SessionID: sessionID, Principal: "operator:" + by, Transport: "cli", Capability: "operator.phase",
		Phase: phase, Decision: "allow", Outcome: "ok", Reason: reason,
	}
	if err != nil {
		rec.Outcome, rec.Error = "error", err.Error()
	}
	if aerr := o.db.Append(ctx, rec); aerr != nil {
		return fmt.Errorf("auditing the phase change: %w", aerr)
	}
	return err
}

// applyPhases applies operators' phase changes to open sessions.
func (r *Runner) applyPhases(ctx context.Context) {
	phases, err := r.db.SessionPhases(ctx)
	if err != nil {
		r.log.Error("reading operator phases", "err", err)
		return
	}
	for id, phase := range phases {
		s, ok := r.Session(id)
		if !ok || s.phase.Phase() == phase {
			continue
		}
		from := s.phase.Phase()
		if err := s.phase.Set(phase); err != nil {
			r.log.Error("operator phase refused", "session", id, "err", err)
			continue
		}
		rec := s.record("session.phase")
		rec.Decision, rec.Outcome, rec.Reason = "allow", "ok", fmt.Sprintf("phase %s → %s, set by an operator", from, phase)
		if err := r.db.Append(ctx, rec); err != nil {
			r.log.Error("auditing a phase change", "err", err)
		}
	}
}
