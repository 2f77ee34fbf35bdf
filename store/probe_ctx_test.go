package store

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// watchedCtx counts how often anything asks for its Done channel.
type watchedCtx struct {
	context.Context
	asked atomic.Int64
}

func (c *watchedCtx) Done() <-chan struct{} {
	c.asked.Add(1)
	return c.Context.Done()
}

// TestProbeIgnoresCancellation (issue 27): the SQLite state probe on every
// call does not watch the caller's context — database/sql and the driver
// start a goroutine per statement for a context that can end, ~40% of the
// probe's cost — and still reads what another handle committed.
func TestProbeIgnoresCancellation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db, other := openAt(t, path, nil), openAt(t, path, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 3 {
		// Each probe follows a commit, so it reads, not only data_version.
		if err := db.Append(context.Background(), &audit.Record{Outcome: audit.OutcomeOK}); err != nil {
			t.Fatal(err)
		}
		w := &watchedCtx{Context: ctx}
		on, err := db.KillSwitchEngaged(w)
		if err != nil || on != (i == 2) {
			t.Fatalf("probe %d: engaged %v, %v", i, on, err)
		}
		if n := w.asked.Load(); n != 0 {
			t.Fatalf("probe %d watched the caller's context (%d Done calls)", i, n)
		}
		if i == 1 {
			if err := other.SetKillSwitch(context.Background(), true, "tester", "drill"); err != nil {
				t.Fatal(err)
			}
		}
	}
}
