package runner

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/kit/metrics"
)

// Approval latency (airlock_approval_latency_seconds, issue 12) is
// observed where a need that waited for a person is decided. Decisions
// this process makes (an answer given in the client, an expiry) are
// reported by the declarations manager's hook at once. An operator's
// decisions — `airlock approvals approve` is a separate process nobody
// scrapes, a console another — are found by the sweep: a need that was
// waiting (at the last sweep, or announced since by this process) and is
// no longer, decided by an operator, is reported then with its stored
// decision time, so at most a sweep interval late. Each decision is
// reported once per process; several serving processes on one store each
// report an operator's decisions of the needs they saw waiting.

// approvalWatch is the sweep's memory.
type approvalWatch struct {
	mu      sync.Mutex
	waiting map[string]time.Time // id -> waiting since, at the last sweep
	here    map[string]bool      // ids this process's manager reported
}

// watch adds a need this process just saw start waiting, so a decision
// made before the next sweep lists it is still found.
func (w *approvalWatch) watch(id string, since time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiting == nil {
		w.waiting = map[string]time.Time{}
	}
	if _, ok := w.waiting[id]; !ok {
		w.waiting[id] = since
	}
}

// approvalObserver reports a decided need to m (and remembers it was
// reported here, for the sweep); nil when m is.
func approvalObserver(m *metrics.Metrics, w *approvalWatch) func(*declarations.Declaration, declarations.State, time.Duration) {
	if m == nil {
		return nil
	}
	return func(d *declarations.Declaration, to declarations.State, waited time.Duration) {
		m.ApprovalDecided(string(to), waited)
		if w != nil {
			w.mu.Lock()
			w.here[d.ID] = true
			w.mu.Unlock()
		}
	}
}

// observeDecisionsElsewhere is the sweep's part: see the file comment.
func (r *Runner) observeDecisionsElsewhere(ctx context.Context) {
	if r.metrics == nil {
		return
	}
	listed := r.now().UTC()
	now, err := r.db.Declarations().List(ctx, declarations.Filter{States: []declarations.State{declarations.StateDeclared}})
	if err != nil {
		r.log.Warn("listing waiting declarations for approval latency", "err", err)
		return
	}
	waiting := make(map[string]time.Time, len(now))
	for _, d := range now {
		waiting[d.ID] = declarations.WaitingSince(d)
	}
	w := &r.approvals
	w.mu.Lock()
	prev, here := w.waiting, w.here
	for id, since := range prev {
		// Watched after the list was read: not in it, yet still waiting
		// as far as this sweep knows; the next one decides.
		if !since.Before(listed) {
			waiting[id] = since
		}
	}
	w.waiting = waiting
	// Keep only what a later sweep can still meet (ids waiting now).
	w.here = map[string]bool{}
	for id := range here {
		if _, ok := waiting[id]; ok {
			w.here[id] = true
		}
	}
	w.mu.Unlock()
	for id, since := range prev {
		if _, still := waiting[id]; still || here[id] {
			continue
		}
		d, err := r.db.Declarations().Get(ctx, id)
		if err != nil || d == nil {
			continue
		}
		// Its last move out of declared: an operator's approval or
		// denial is reported; an expiry is reported where it expired, a
		// policy decision never waited for a person.
		for i := len(d.History) - 1; i >= 0; i-- {
			h := d.History[i]
			if h.From != declarations.StateDeclared {
				continue
			}
			if (h.To == declarations.StateApproved || h.To == declarations.StateDenied) && strings.HasPrefix(h.By, "operator:") {
				r.metrics.ApprovalDecided(string(h.To), h.At.Sub(since))
			}
			break
		}
	}
}
