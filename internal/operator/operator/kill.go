package operator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/audit/witness"
	"github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/policy/killswitch"
	"github.com/airlock-dev/airlock/store"
)

// SetKillSwitch engages or releases the kill switch on every server using
// this state directory, records it in the audit trail and checkpoints it
// in the witness.
//
// Engaging writes the kill switch file first, so the switch is on even if
// the record then cannot be written (the error says so; any runner on the
// state directory records it later). Releasing records first and changes
// the file only once the record is committed: a release that cannot be
// audited does not happen (fail closed).
func (o *API) SetKillSwitch(ctx context.Context, engaged bool, by, reason string) error {
	var st killswitch.State
	if engaged {
		var err error
		if st, err = TripKillSwitch(o.dir, by, reason); err != nil {
			return err
		}
	} else {
		st = killswitch.State{By: by, Reason: reason, At: o.now().UTC(), ID: killswitch.NewID()}
	}
	if _, err := state.RecordKill(ctx, o.db, st); err != nil {
		return fmt.Errorf("auditing kill switch change: %w", err)
	}
	if !engaged {
		if err := killswitch.Write(o.dir, st); err != nil {
			return fmt.Errorf("releasing the kill switch: %w", err)
		}
	}
	if err := checkpointWith(ctx, o.dir, o.db); err != nil {
		return fmt.Errorf("checkpointing the kill switch change: %w", err)
	}
	return nil
}

// KillSwitch reports whether the kill switch is engaged: by its file or
// by the store; an unreadable state is engaged, with the error.
func (o *API) KillSwitch(ctx context.Context) (bool, error) {
	st, err := killswitch.Read(o.dir)
	if err != nil {
		return true, err
	}
	on, err := o.db.KillSwitch(ctx)
	return on || st.Engaged, err
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
func RecordKillChange(ctx context.Context, stateDir string, st killswitch.State) (*audit.Record, error) {
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

func tryRecordKillChange(ctx context.Context, stateDir string, st killswitch.State) (*audit.Record, error) {
	db, err := state.OpenStore(state.StoreLocation("", stateDir), &store.Options{BusyTimeout: time.Second, Instance: witness.NewInstance("cli")})
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return state.RecordKill(ctx, db, st)
}

// CheckpointNow appends one witness checkpoint of the store in stateDir
// (opened read-only, which works while another process holds the write
// lock) and the kill switch state, for operator commands.
func CheckpointNow(ctx context.Context, stateDir string) error {
	db, err := state.OpenStoreReadOnly(state.StoreLocation("", stateDir))
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
	l, _, err := state.OpenWitness(stateDir, witness.NewInstance("cli"), nil)
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
