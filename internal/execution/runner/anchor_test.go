package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/witness"
	"github.com/airlock-dev/airlock/internal/config"
	statedir "github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// TestKillFileTripsRunnerWhileStoreLocked: with another connection holding
// BEGIN IMMEDIATE on the store, operator.TripKillSwitch returns at once and the
// runner's kill-switch step refuses the next call; once the lock is gone
// the runner itself audits the change (issue 10 item 13).
func TestKillFileTripsRunnerWhileStoreLocked(t *testing.T) {
	r, state := newRunner(t, nil)
	ctx := context.Background()
	raw, err := (&rawLock{}).open(filepath.Join(state, statedir.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	// The lock is released only further down: a trip that waited for it
	// would never return (the half minute is a hang guard, not a bound).
	tripped := make(chan error, 1)
	go func() {
		_, err := operator.TripKillSwitch(state, "op", "locked drill")
		tripped <- err
	}()
	select {
	case err := <-tripped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("tripping waits for the store's lock")
	}
	// Every call reads the switch itself: the very next one is refused.
	var v *violation.Error
	if err := r.killSwitch(ctx); !errors.As(err, &v) || v.Code != violation.KillSwitchEngaged {
		t.Fatalf("kill switch step right after the trip: %v", err)
	}
	raw.release()
	deadline := time.Now().Add(time.Minute) // a hang guard: the recorder retries every 250 ms
	for {
		recs, err := r.db.Tail(ctx, 5)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, rec := range recs {
			found = found || rec.Capability == "operator.kill_switch" && rec.Reason == "locked drill"
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kill switch change not audited after the lock was released: %+v", recs)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunnerRefusesRolledBackStore: a server does not start on a store
// that is behind its witness (an older copy restored), so it cannot go on
// appending to a rolled-back chain.
func TestRunnerRefusesRolledBackStore(t *testing.T) {
	r, state := newRunner(t, nil)
	s := openSession(t, r)
	ctx := context.Background()
	s.Run(ctx, Call{Tool: "list_pools"})
	older := filepath.Join(t.TempDir(), "older.db")
	if _, err := (&rawLock{}).exec(filepath.Join(state, statedir.DBFile), fmt.Sprintf("VACUUM INTO '%s'", older)); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		s.Run(ctx, Call{Tool: "list_pools"})
	}
	cfg := r.Config()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// The final checkpoint at Close names the last record.
	key, _ := witness.LoadKey(filepath.Join(state, statedir.WitnessKeyFile))
	cps, err := witness.ReadFile(filepath.Join(state, statedir.WitnessFile), key)
	if err != nil || len(cps) == 0 {
		t.Fatalf("witness: %v", err)
	}
	b, _ := os.ReadFile(older)
	os.Remove(filepath.Join(state, statedir.DBFile+"-wal"))
	os.Remove(filepath.Join(state, statedir.DBFile+"-shm"))
	if err := os.WriteFile(filepath.Join(state, statedir.DBFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	wantRolledBack(t, cfg, state, "a rolled-back store")
}

// checkpointEvery returns a configuration whose witness checkpoints every
// n records (and not on the clock while a test runs), and a state
// directory for it.
func checkpointEvery(t *testing.T, n int) (*config.Config, string) {
	t.Helper()
	dir := t.TempDir()
	cfg, err := config.Parse("t.yaml", []byte(fmt.Sprintf("audit: {checkpoint_every_records: %d, checkpoint_interval_ms: 3600000}\npools: []\npolicies:\n  base: {allow: [\"pool.*\"]}\nroles:\n  local: {policy: base}\n", n)), dir)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, filepath.Join(dir, "state")
}

// wantRolledBack fails the test unless New refuses the store in state,
// described by what, with witness.ErrRolledBack.
func wantRolledBack(t *testing.T, cfg *config.Config, state, what string) {
	t.Helper()
	r, err := New(cfg, state, nil)
	if err == nil {
		r.Close()
		t.Fatal("runner started on " + what)
	}
	if !errors.Is(err, witness.ErrRolledBack) {
		t.Fatalf("err = %v, want ErrRolledBack", err)
	}
}

// TestCheckpointCadenceFromConfig: audit.checkpoint_every_records bounds
// the unanchored tail while the server runs.
func TestCheckpointCadenceFromConfig(t *testing.T) {
	cfg, state := checkpointEvery(t, 2)
	r, err := New(cfg, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := openSession(t, r)
	for range 6 {
		s.Run(context.Background(), Call{Tool: "list_pools"})
	}
	key, _ := witness.LoadKey(filepath.Join(state, statedir.WitnessKeyFile))
	deadline := time.Now().Add(30 * time.Second) // a hang guard: the checkpointer writes on its goroutine
	for {
		head, _, _ := r.db.Head(context.Background())
		cps, err := witness.ReadFile(filepath.Join(state, statedir.WitnessFile), key)
		if err != nil {
			t.Fatal(err)
		}
		if last := cps[len(cps)-1].Seq; head-last < 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("head %d, last checkpoint %+v", head, cps[len(cps)-1])
		}
		time.Sleep(20 * time.Millisecond)
	}
}
