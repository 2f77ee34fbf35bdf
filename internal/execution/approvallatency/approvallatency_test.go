package approvallatency

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/kit/metrics"
)

// fakeStore lists the same waiting needs at every sweep; a need no longer
// listed was decided by an operator.
type fakeStore struct {
	t0      time.Time
	mu      sync.Mutex
	waiting []*declarations.Declaration
	decided map[string]*declarations.Declaration
}

func (s *fakeStore) List(context.Context, declarations.Filter) ([]*declarations.Declaration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*declarations.Declaration(nil), s.waiting...), nil
}

func (s *fakeStore) Get(_ context.Context, id string) (*declarations.Declaration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decided[id], nil
}

func newFake(t0 time.Time, n int) *fakeStore {
	s := &fakeStore{t0: t0, decided: map[string]*declarations.Declaration{}}
	for i := range n {
		s.waiting = append(s.waiting, &declarations.Declaration{ID: fmt.Sprintf("d%d", i), State: declarations.StateDeclared, CreatedAt: t0})
	}
	return s
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestSweepConcurrentWithWaiting: a sweep and a need announced meanwhile
// (the runner's notifyPending) share the watch's map; the sweep must not
// read it after letting go of the lock. Fails under -race if it does (the
// race the agentdojo replay hit with needs waiting for a person).
func TestSweepConcurrentWithWaiting(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	st := newFake(t0, 64)
	w := New(metrics.New(), st, func() time.Time { return t0.Add(time.Minute) }, quiet())
	ctx := context.Background()
	w.Sweep(ctx) // the 64 needs are waiting: every later sweep walks them
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for range 300 {
			w.Sweep(ctx)
		}
	}()
	go func() {
		defer wg.Done()
		for i := range 3000 {
			// Announced after the sweep listed: kept as waiting.
			w.Waiting(fmt.Sprintf("new%d", i), t0.Add(time.Hour))
		}
	}()
	wg.Wait()
}

// TestSweepReportsAnOperatorsDecisionOnce: a need waiting at one sweep and
// approved by an operator before the next is reported by that sweep, and
// never again.
func TestSweepReportsAnOperatorsDecisionOnce(t *testing.T) {
	t0 := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	st := newFake(t0, 2)
	m := metrics.New()
	w := New(m, st, func() time.Time { return t0.Add(time.Minute) }, quiet())
	ctx := context.Background()
	w.Sweep(ctx)
	approved := *st.waiting[0]
	approved.State = declarations.StateApproved
	approved.History = []declarations.Transition{{From: declarations.StateDeclared, To: declarations.StateApproved, By: "operator:carol", At: t0.Add(30 * time.Second)}}
	st.mu.Lock()
	st.waiting = st.waiting[1:]
	st.decided[approved.ID] = &approved
	st.mu.Unlock()
	w.Sweep(ctx)
	w.Sweep(ctx)
	if got := decidedCount(t, m, "approved"); got != 1 {
		t.Errorf("approvals observed = %d, want 1", got)
	}
}

// decidedCount is how many decisions m observed with decision, as
// scraped.
func decidedCount(t *testing.T, m *metrics.Metrics, decision string) int {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	want := `airlock_approval_latency_seconds_count{decision="` + decision + `"} `
	for line := range strings.Lines(rec.Body.String()) {
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), want); ok {
			c, err := strconv.Atoi(n)
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	return 0
}
