package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/edge/tracing"
	"github.com/airlock-dev/airlock/internal/kit/metrics"
)

// This file is the runner's side of the operator's view (issue 12 item
// 2): what it reports to metrics, and whether it is ready to serve.

// observe reports a finished call: its counters and its time per step.
// Labels are server-chosen only (see package metrics): the tool's name if
// it is one of ours, the decision, the outcome, the violation code.
func (c *call) observe(end time.Time) {
	c.trace(end)
	m := c.s.r.metrics
	if m == nil {
		return
	}
	tool := "(unknown)"
	if c.tool.Name != "" {
		tool = c.tool.Name
	}
	m.Call(tool, c.rec.Decision, string(c.rec.Outcome), c.rec.Violation, end.Sub(c.start))
	decided := c.start
	if !c.execStart.IsZero() {
		m.Step(metrics.StepDecide, c.execStart.Sub(c.start))
		m.Step(metrics.StepExecute, c.execEnd.Sub(c.execStart))
		decided = c.execEnd
	}
	if !c.auditStart.IsZero() {
		m.Step(metrics.StepFinish, c.auditStart.Sub(decided))
		m.Step(metrics.StepAudit, end.Sub(c.auditStart))
	}
}

// traceInfo is what the call's span starts with: server-chosen values
// and the caller's trace context, never an argument (package tracing).
func (s *Session) traceInfo(in Call) tracing.CallInfo {
	info := tracing.CallInfo{SessionID: s.id, RequestID: in.RequestID, Transport: s.transport,
		Traceparent: in.Traceparent, Tracestate: in.Tracestate}
	if s.id == sessionless {
		info.SessionID = ""
	}
	if _, ok := s.r.tools[in.Tool]; ok {
		info.Tool = in.Tool // an unknown name is the agent's text: not exported
	}
	return info
}

// trace ends the call's span with its steps and outcome (issue 12 item 3).
func (c *call) trace(end time.Time) {
	if c.span == nil {
		return
	}
	decided := c.start
	steps := make([]tracing.Step, 0, 4)
	if !c.execStart.IsZero() {
		steps = append(steps, tracing.Step{Name: "airlock.decide", Start: c.start, End: c.execStart},
			tracing.Step{Name: "airlock.execute", Start: c.execStart, End: c.execEnd})
		decided = c.execEnd
	}
	if !c.auditStart.IsZero() {
		steps = append(steps, tracing.Step{Name: "airlock.finish", Start: decided, End: c.auditStart},
			tracing.Step{Name: "airlock.audit", Start: c.auditStart, End: end})
	}
	c.span.End(steps, tracing.Outcome{Tier: c.rec.Tier, Phase: c.rec.Phase, Decision: c.rec.Decision, RuleID: c.rec.RuleID,
		Outcome: string(c.rec.Outcome), Violation: c.rec.Violation, AuditSeq: c.rec.Seq}, end)
}

// Errors from Ready.
var (
	// ErrNotReady wraps why the runner should not be sent traffic.
	ErrNotReady = errors.New("not ready")
)

// Ready reports whether the runner can serve calls now: the store takes a
// write (a cheap probe, rolled back: a call that cannot be audited is
// refused, so a server whose store cannot write is not ready) and every
// witness file is still where it was opened. For /readyz; the error wraps
// ErrNotReady and the cause (store.ErrUnavailable, witness.ErrUnreachable).
func (r *Runner) Ready(ctx context.Context) error {
	if err := r.db.Writable(ctx); err != nil {
		return fmt.Errorf("%w: store: %w", ErrNotReady, err)
	}
	if err := r.anchor.Reachable(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	return nil
}
