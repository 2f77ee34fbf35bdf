package upstream

import (
	"testing"
	"time"
)

// TestExitStaysTheLastErrorOfTheCallItFailed: a process that exits
// mid-call fails the call too, and which is noticed first is the
// scheduler's choice (TestWarmCrashRestartedAndAudited failed 1 run in 4
// when the call's "transport closed" came second). Either way the exit is
// the last error; a call begun after the exit replaces it.
func TestExitStaysTheLastErrorOfTheCallItFailed(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	began, exit, callErr, later := t0, t0.Add(time.Millisecond), t0.Add(2*time.Millisecond), t0.Add(time.Second)
	tests := []struct {
		name  string
		steps func(s *stats)
		want  string
		calls int64
	}{
		{"exit noticed first", func(s *stats) {
			s.failed("up", "exited: exit 3", exit, time.Time{})
			s.failed("up", "transport closed", callErr, began)
		}, "exited: exit 3", 1},
		{"call failure noticed first", func(s *stats) {
			s.failed("up", "transport closed", exit, began)
			s.failed("up", "exited: exit 3", callErr, time.Time{})
		}, "exited: exit 3", 1},
		{"call failure noticed first, stamped after the exit", func(s *stats) {
			// Each time is read before the lock: the call's can be the
			// later although its failure is recorded first (CI, 2026-11-27).
			s.failed("up", "transport closed", callErr, began)
			s.failed("up", "exited: exit 3", exit, time.Time{})
		}, "exited: exit 3", 1},
		{"an exit replaces a failure before it", func(s *stats) {
			s.failed("up", "timed out", callErr, began)
			s.failed("up", "exited: exit 3", later, time.Time{})
		}, "exited: exit 3", 1},
		{"a later call's failure replaces the exit", func(s *stats) {
			s.failed("up", "exited: exit 3", exit, time.Time{})
			s.failed("up", "timed out", later.Add(time.Millisecond), later)
		}, "timed out", 1},
		{"a call failure without an exit", func(s *stats) {
			s.failed("up", "transport closed", callErr, began)
		}, "transport closed", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &stats{by: map[string]*Stat{}}
			tt.steps(s)
			if st := s.by["up"]; st.LastError != tt.want || st.Errors != tt.calls {
				t.Fatalf("last error %q, %d failed calls; want %q, %d", st.LastError, st.Errors, tt.want, tt.calls)
			}
		})
	}
}
