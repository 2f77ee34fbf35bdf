package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

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

func witnessKeyPath(stateDir string) string {
	if p := os.Getenv(WitnessKeyEnv); p != "" {
		return p
	}
	return filepath.Join(stateDir, WitnessKeyFile)
}

// openWitness loads (creating on first use) the witness key and opens the
// witness file for appending; instance names the process in its
// checkpoints (witness.NewInstance).
func openWitness(stateDir, instance string, mirrors []string) (*witness.Log, []byte, error) {
	key, err := witness.LoadOrCreateKey(witnessKeyPath(stateDir))
	if err != nil {
		return nil, nil, err
	}
	l, err := witness.OpenLog(filepath.Join(stateDir, WitnessFile), key,
		&witness.Options{Instance: instance, Mirrors: mirrors})
	return l, key, err
}

// anchor is a runner's link to the kill switch file and the witness.
type anchor struct {
	dir  string
	kill *killswitch.Switch
	// watch holds the switch (file and store) in memory for the per-call
	// check (issue 11); kill stays for the background recorder, which
	// wants the file as it is now.
	watch *killswitch.Watcher
	log   *witness.Log
	key   []byte
	cp    atomic.Pointer[witness.Checkpointer]

	// recorded is the id of the last kill switch change known to be in the
	// audit chain; syncing guards the one goroutine that records a newer one.
	recorded atomic.Pointer[string]
	syncing  atomic.Bool
	done     chan struct{}
	wg       sync.WaitGroup
}

// notify is the store's OnCommit hook.
func (a *anchor) notify(seq int64) {
	if c := a.cp.Load(); c != nil {
		c.Notify(seq)
	}
}

// openAnchor opens the witness for a server, checks the store against it
// (refusing a chain that was cut, emptied, restored from an older copy or
// rewritten since it was witnessed), and starts the checkpointer with a
// first checkpoint.
func (r *Runner) openAnchor(ctx context.Context, stateDir string) error {
	a := &r.anchor
	a.dir, a.kill, a.done = stateDir, killswitch.Open(stateDir), make(chan struct{})
	a.watch = killswitch.Watch(stateDir, &killswitch.WatchOptions{
		Probe: r.db.KillSwitchEngaged, Notices: r.db.KillSwitchNotices(), Logger: r.log})
	cps, err := witness.ReadFile(filepath.Join(stateDir, WitnessFile), a.key)
	if err == nil {
		err = witness.Check(ctx, cps, signedChain{r.db, a.key}, r.killForWitness(ctx))
	}
	var f *witness.Finding
	switch {
	case errors.As(err, &f) && errors.Is(err, witness.ErrUnanchored):
		r.log.Warn("audit chain had no witness checkpoint; anchoring it now", "records", f.Seq)
	case err != nil:
		a.watch.Close()
		return fmt.Errorf("the audit store does not match its witness (run 'airlock audit verify'): %w", err)
	}
	audit := r.gen.Load().cfg.Audit
	cp := witness.StartCheckpointer(a.log, r.db, func() bool { return r.killForWitness(context.Background()) },
		&witness.CheckpointerOptions{EveryRecords: audit.CheckpointEveryRecords, Interval: audit.CheckpointInterval(), Logger: r.log})
	a.cp.Store(cp)
	if err := cp.Now(ctx); err != nil {
		cp.Close()
		a.watch.Close()
		return fmt.Errorf("writing the first witness checkpoint: %w", err)
	}
	return nil
}

// closeAnchor writes the final checkpoint (clean shutdown) and closes the
// witness file. The store must still be open.
func (r *Runner) closeAnchor() error {
	a := &r.anchor
	if a.done == nil {
		return nil
	}
	close(a.done)
	a.wg.Wait()
	a.watch.Close()
	var err error
	if c := a.cp.Load(); c != nil {
		err = c.Close()
	}
	return errors.Join(err, a.log.Close())
}

// killForWitness is the kill switch state a checkpoint records: engaged if
// the file or the store says so, or if either cannot be read.
func (r *Runner) killForWitness(ctx context.Context) bool {
	if w := r.anchor.watch; w != nil {
		return w.View().Engaged()
	}
	st, err := r.anchor.kill.State()
	if err != nil || st.Engaged {
		return true
	}
	on, _ := r.db.KillSwitchEngaged(ctx)
	return on
}

// recordKillAsync records kill switch change st in the audit chain in the
// background, retrying while the store is locked, so a switch tripped while
// another process held the write lock is in the audit as soon as the store
// can take it. At most one such goroutine runs per runner.
func (r *Runner) recordKillAsync(st killswitch.State) {
	a := &r.anchor
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
				_, err = recordKillChange(context.Background(), r.db, cur)
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
			r.log.Warn("kill switch change not yet audited; retrying", "err", err)
			select {
			case <-a.done:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
}

// killRecord is the audit record of a kill switch change.
func killRecord(st killswitch.State) *store.Record {
	return &store.Record{
		Principal: "operator:" + st.By, Transport: "cli", Capability: "operator.kill_switch",
		Decision: "allow", Outcome: "ok", Reason: st.Reason,
		Extra: mustJSON(map[string]any{"engaged": st.Engaged, "change": st.ID, "changed_at": st.At.UTC()}),
	}
}

// recordKillChange records st once in db's chain (see store.RecordKillSwitch).
func recordKillChange(ctx context.Context, db *store.DB, st killswitch.State) (*store.Record, error) {
	rec := killRecord(st)
	ok, err := db.RecordKillSwitch(ctx, store.KillChange{ID: st.ID, Engaged: st.Engaged, By: st.By, Reason: st.Reason, At: st.At}, rec)
	if err != nil || !ok {
		return nil, err
	}
	return rec, nil
}

// TripKillSwitch engages the kill switch of every process on stateDir by
// writing the kill switch file. It needs no store lock: it succeeds while
// another process holds the store's write lock (issue 10 item 13), and every
// runner refuses its next call. The change still has to be audited:
// [RecordKillChange], or any runner on stateDir, does that.
func TripKillSwitch(stateDir, by, reason string) (killswitch.State, error) {
	if err := os.MkdirAll(stateDir, 0o711); err != nil {
		return killswitch.State{}, fmt.Errorf("creating state dir: %w", err)
	}
	st := killswitch.State{Engaged: true, By: by, Reason: reason, At: time.Now().UTC(), ID: killswitch.NewID()}
	if err := killswitch.Write(stateDir, st); err != nil {
		return killswitch.State{}, fmt.Errorf("engaging the kill switch: %w", err)
	}
	return st, nil
}

// RecordKillChange appends the audit record of kill switch change st,
// retrying while the store is locked until it succeeds or ctx ends. It
// returns the record (nil if the change was already recorded).
func RecordKillChange(ctx context.Context, stateDir string, st killswitch.State) (*store.Record, error) {
	for {
		rec, err := tryRecordKillChange(ctx, stateDir, st)
		if !errors.Is(err, store.ErrUnavailable) {
			return rec, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("kill switch change not audited yet (store locked): %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func tryRecordKillChange(ctx context.Context, stateDir string, st killswitch.State) (*store.Record, error) {
	db, err := openStore(storeLocation("", stateDir), &store.Options{BusyTimeout: time.Second, Instance: witness.NewInstance("cli")})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return recordKillChange(ctx, db, st)
}

// CheckpointNow appends one witness checkpoint of the store in stateDir
// (opened read-only, which works while another process holds the write
// lock) and the kill switch state, for operator commands.
func CheckpointNow(ctx context.Context, stateDir string) error {
	db, err := openStoreReadOnly(storeLocation("", stateDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no chain yet: nothing to anchor
	}
	if err != nil {
		return err
	}
	defer db.Close()
	return checkpointWith(ctx, stateDir, db)
}

func checkpointWith(ctx context.Context, stateDir string, db *store.DB) error {
	l, _, err := openWitness(stateDir, witness.NewInstance("cli"), nil)
	if err != nil {
		return err
	}
	defer l.Close()
	_, err = l.Checkpoint(ctx, db, currentKill(ctx, stateDir, db))
	return err
}

// currentKill is the kill switch as an operator command sees it: engaged
// if the file or the store says so, or either cannot be read.
func currentKill(ctx context.Context, stateDir string, db *store.DB) bool {
	st, err := killswitch.Read(stateDir)
	if err != nil || st.Engaged {
		return true
	}
	on, _ := db.KillSwitch(ctx)
	return on
}
