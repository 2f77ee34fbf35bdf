package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/audit/witness"
	"github.com/airlock-dev/airlock/internal/policy/killswitch"
	"github.com/airlock-dev/airlock/store"
)

// Files of the audit anchor in the state directory.
const (
	// WitnessFile is the append-only file of signed checkpoints.
	WitnessFile = "witness.log"
	// WitnessKeyFile is the default witness key file.
	WitnessKeyFile = "witness.key"
	// WitnessKeyEnv names a witness key file to use instead of the one in
	// the state directory: put it where restoring a backup of the state
	// directory does not reach (and where only the service user reads it).
	WitnessKeyEnv = "AIRLOCK_WITNESS_KEY"
)

// The store is the chain the witness anchors.
var _ witness.Chain = (*store.DB)(nil)

// WitnessKeyPath is the witness key file of stateDir: $AIRLOCK_WITNESS_KEY,
// else WitnessKeyFile in it.
func WitnessKeyPath(stateDir string) string {
	if p := os.Getenv(WitnessKeyEnv); p != "" {
		return p
	}
	return filepath.Join(stateDir, WitnessKeyFile)
}

// OpenWitness loads (creating on first use) the witness key and opens the
// witness file for appending; instance names the process in its
// checkpoints (witness.NewInstance).
func OpenWitness(stateDir, instance string, mirrors []string) (*witness.Log, []byte, error) {
	key, err := witness.LoadOrCreateKey(WitnessKeyPath(stateDir))
	if err != nil {
		return nil, nil, err
	}
	l, err := witness.OpenLog(filepath.Join(stateDir, WitnessFile), key,
		&witness.Options{Instance: instance, Mirrors: mirrors})
	return l, key, err
}

// Anchor is a serving process's link to the kill switch file and the
// witness of its state directory: it checks the store against the witness
// at start, checkpoints the chain while the process serves (and at a clean
// shutdown), reads the kill switch for each call, and records in the audit
// chain a kill switch change made while no process could write the store.
type Anchor struct {
	dir     string
	db      *store.DB
	log     *slog.Logger
	kill    *killswitch.Switch
	failing atomic.Bool // the last check could not read the switch (logged on change)
	witness *witness.Log
	key     []byte
	cp      atomic.Pointer[witness.Checkpointer]

	// recorded is the id of the last kill switch change known to be in the
	// audit chain; syncing guards the one goroutine that records a newer one.
	recorded atomic.Pointer[string]
	syncing  atomic.Bool
	done     chan struct{}
	wg       sync.WaitGroup
}

// OpenAnchor opens the witness of stateDir for a serving process (see
// OpenWitness), before its store: the store's OnCommit hook is
// [Anchor.Notify]. [Anchor.Start] then checks the store against it.
func OpenAnchor(stateDir, instance string, mirrors []string, log *slog.Logger) (*Anchor, error) {
	w, key, err := OpenWitness(stateDir, instance, mirrors)
	if err != nil {
		return nil, err
	}
	return &Anchor{dir: stateDir, log: log, witness: w, key: key}, nil
}

// Dir is the state directory.
func (a *Anchor) Dir() string { return a.dir }

// Notify is the store's OnCommit hook.
func (a *Anchor) Notify(seq int64) {
	if c := a.cp.Load(); c != nil {
		c.Notify(seq)
	}
}

// Start checks the store against the witness (refusing a chain that was
// cut, emptied, restored from an older copy or rewritten since it was
// witnessed), starts the checkpointer (every
// everyRecords records and every interval) with a first checkpoint, and
// audits a kill switch change made while no process could write the store.
// On error nothing is left running but the witness file: Close closes it.
func (a *Anchor) Start(ctx context.Context, db *store.DB, everyRecords int64, interval time.Duration) error {
	a.db, a.kill = db, killswitch.Open(a.dir)
	cps, err := witness.ReadFile(filepath.Join(a.dir, WitnessFile), a.key)
	if err == nil {
		err = witness.Check(ctx, cps, signedChain{db, a.key}, a.killForWitness(ctx))
	}
	var f *witness.Finding
	switch {
	case errors.As(err, &f) && errors.Is(err, witness.ErrUnanchored):
		a.log.Warn("audit chain had no witness checkpoint; anchoring it now", "records", f.Seq)
	case err != nil:
		return fmt.Errorf("the audit store does not match its witness (run 'airlock audit verify'): %w", err)
	}
	cp := witness.StartCheckpointer(a.witness, db, func() bool { return a.killForWitness(context.Background()) },
		&witness.CheckpointerOptions{EveryRecords: everyRecords, Interval: interval, Logger: a.log})
	a.cp.Store(cp)
	if err := cp.Now(ctx); err != nil {
		cp.Close()
		a.cp.Store(nil)
		return fmt.Errorf("writing the first witness checkpoint: %w", err)
	}
	a.done = make(chan struct{})
	// A kill switch tripped while no runner could write the store is
	// audited now (and by the per-call check when it changes).
	if st, err := a.kill.State(); err == nil && st.ID != "" {
		a.recordAsync(st)
	}
	return nil
}

// Close writes the final checkpoint (clean shutdown) and closes the
// witness file. The store must still be open.
func (a *Anchor) Close() error {
	if a.done == nil {
		return a.witness.Close() // never started
	}
	close(a.done)
	a.wg.Wait()
	var err error
	if c := a.cp.Load(); c != nil {
		err = c.Close()
	}
	return errors.Join(err, a.witness.Close())
}

// Kill reads the kill switch for one call, on the caller's path: the
// file (one stat) and the store's setting (killswitch.Switch.Check). A
// change complete before the call began is in what it returns — no
// goroutine has to notice it first (issue 26 item 7). A state that cannot
// be read is engaged and logged once per spell; a change of the file this
// process has not seen recorded is audited in the background as soon as
// the store can take it.
func (a *Anchor) Kill(ctx context.Context) killswitch.View {
	v := a.kill.Check(ctx, a.db.KillSwitchEngaged)
	if failing := v.Err != nil; a.failing.Swap(failing) != failing {
		if failing {
			a.log.Error("kill switch state unreadable; refusing all calls", "err", v.Err)
		} else {
			a.log.Info("kill switch state readable again")
		}
	}
	if st := v.File; v.Err == nil && st.ID != "" {
		if p := a.recorded.Load(); p == nil || *p != st.ID {
			a.recordAsync(st)
		}
	}
	return v
}

// Reachable reports whether every witness file is still where it was
// opened (witness.ErrUnreachable), for readiness.
func (a *Anchor) Reachable() error { return a.witness.Reachable() }

// killForWitness is the kill switch state a checkpoint records: engaged if
// the file or the store says so, or if either cannot be read.
func (a *Anchor) killForWitness(ctx context.Context) bool {
	return a.kill.Check(ctx, a.db.KillSwitchEngaged).Engaged()
}

// recordAsync records kill switch change st in the audit chain in the
// background, retrying while the store is locked, so a switch tripped while
// another process held the write lock is in the audit as soon as the store
// can take it. At most one such goroutine runs per process.
func (a *Anchor) recordAsync(st killswitch.State) {
	if a.done == nil || !a.syncing.CompareAndSwap(false, true) {
		return
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer a.syncing.Store(false)
		for {
			// Record what the file says now, not what it said when this
			// goroutine started: never an engage superseded by a release.
			cur, err := a.kill.State()
			if err == nil {
				if p := a.recorded.Load(); p != nil && *p == cur.ID {
					return
				}
				if cur.ID == "" {
					return
				}
				_, err = RecordKill(context.Background(), a.db, cur)
				if err == nil {
					id := cur.ID
					a.recorded.Store(&id)
					if c := a.cp.Load(); c != nil {
						c.Now(context.Background())
					}
					return
				}
			}
			if errors.Is(err, store.ErrClosed) {
				return
			}
			a.log.Warn("kill switch change not yet audited; retrying", "err", err)
			select {
			case <-a.done:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
}

// RecordKill records kill switch change st once in db's chain (see
// store.RecordKillSwitch); it returns the record, nil if the change was
// already recorded.
func RecordKill(ctx context.Context, db *store.DB, st killswitch.State) (*audit.Record, error) {
	rec := audit.KillSwitch(audit.Kill{ID: st.ID, Engaged: st.Engaged, By: st.By, Reason: st.Reason, At: st.At})
	ok, err := db.RecordKillSwitch(ctx, store.KillChange{ID: st.ID, Engaged: st.Engaged, By: st.By, Reason: st.Reason, At: st.At}, rec)
	if err != nil || !ok {
		return nil, err
	}
	return rec, nil
}

// signedChain is the store as the witness check sees it: records rotated
// out count as rotated (not rolled back) only behind an anchor signed with
// the witness key. Someone who deleted the oldest records and wrote an
// anchor by hand gets the rollback finding, at server start as in verify
// (TestRunnerRefusesForgedAnchor).
type signedChain struct {
	*store.DB
	key []byte
}

func (c signedChain) RotatedBefore(ctx context.Context) (int64, error) {
	a, err := c.DB.Anchor(ctx)
	if err != nil {
		return 0, err
	}
	if store.CheckAnchor(a, c.key) != nil {
		return 1, nil
	}
	return a.First, nil
}

var _ witness.RotatedChain = signedChain{}
