// Package approvallatency times how long declared needs wait for a person
// (airlock_approval_latency_seconds, issue 12), observed where a need that
// waited is decided. Decisions a serving process makes itself (an answer
// given in the client, an expiry) are reported by the declarations
// manager's hook at once ([Watch.Observer]). An operator's decisions —
// `airlock approvals approve` is a separate process nobody scrapes, a
// console another — are found by the sweep ([Watch.Sweep]): a need that
// was waiting (at the last sweep, or announced since by this process) and
// is no longer, decided by an operator, is reported then with its stored
// decision time, so at most a sweep interval late.
//
// The invariant it keeps: each decision is reported once per process.
// Several serving processes on one store each report an operator's
// decisions of the needs they saw waiting.
package approvallatency

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/kit/metrics"
)

// Store is what the sweep reads of the declarations (the store's
// declaration store).
type Store interface {
	Get(ctx context.Context, id string) (*declarations.Declaration, error)
	List(ctx context.Context, filter declarations.Filter) ([]*declarations.Declaration, error)
}

// Watch is the sweep's memory. It is safe for concurrent use.
type Watch struct {
	m   *metrics.Metrics // nil: nothing is timed
	st  Store
	now func() time.Time
	log *slog.Logger

	mu      sync.Mutex
	waiting map[string]time.Time // id -> waiting since, at the last sweep
	here    map[string]bool      // ids this process's manager reported
}

// New returns a watch reporting to m (nil: it reports nothing) from the
// declarations in st.
func New(m *metrics.Metrics, st Store, now func() time.Time, log *slog.Logger) *Watch {
	return &Watch{m: m, st: st, now: now, log: log, here: map[string]bool{}}
}

// Waiting adds a need this process just saw start waiting, so a decision
// made before the next sweep lists it is still found.
func (w *Watch) Waiting(id string, since time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.waiting == nil {
		w.waiting = map[string]time.Time{}
	}
	if _, ok := w.waiting[id]; !ok {
		w.waiting[id] = since
	}
}

// Observer is the declarations manager's hook (OnDecided): it reports a
// decided need (and remembers it was reported here, for the sweep); nil
// when nothing is timed.
func (w *Watch) Observer() func(*declarations.Declaration, declarations.State, time.Duration) {
	if w.m == nil {
		return nil
	}
	return func(d *declarations.Declaration, to declarations.State, waited time.Duration) {
		w.m.ApprovalDecided(string(to), waited)
		w.mu.Lock()
		w.here[d.ID] = true
		w.mu.Unlock()
	}
}

// Sweep reports the operators' decisions made since the last sweep (see
// the package doc).
func (w *Watch) Sweep(ctx context.Context) {
	if w.m == nil {
		return
	}
	listed := w.now().UTC()
	now, err := w.st.List(ctx, declarations.Filter{States: []declarations.State{declarations.StateDeclared}})
	if err != nil {
		w.log.Warn("listing waiting declarations for approval latency", "err", err)
		return
	}
	waiting := make(map[string]time.Time, len(now))
	for _, d := range now {
		waiting[d.ID] = declarations.WaitingSince(d)
	}
	w.mu.Lock()
	prev, here := w.waiting, w.here
	for id, since := range prev {
		// Watched after the list was read: not in it, yet still waiting
		// as far as this sweep knows; the next one decides.
		if !since.Before(listed) {
			waiting[id] = since
		}
	}
	// The needs that stopped waiting and were not reported here, chosen
	// while the lock is held: once w.waiting is published, Waiting (the
	// runner's notifyPending) writes to it, so this sweep must not read it
	// after unlocking (TestSweepConcurrentWithWaiting).
	left := map[string]time.Time{}
	for id, since := range prev {
		if _, still := waiting[id]; !still && !here[id] {
			left[id] = since
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
	for id, since := range left {
		d, err := w.st.Get(ctx, id)
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
				w.m.ApprovalDecided(string(h.To), h.At.Sub(since))
			}
			break
		}
	}
}
