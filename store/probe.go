package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// probeBytes is how much the readiness probe writes: two SQLite pages, so
// a file at its size cap (max_page_count, a full disk) fails the probe
// rather than pass on a page's leftover free space.
const probeBytes = 8 << 10

// sqlProbe writes a row no reader ever sees (the transaction is rolled
// back). The value is a constant: nothing of the caller's reaches SQL.
var sqlProbe = `INSERT INTO settings (name, value, updated_by, reason, updated_at) VALUES ('airlock.ready-probe', '` +
	strings.Repeat("x", probeBytes) + `', 'probe', 'probe', 'probe')`

// Writable reports whether the store can take a write now: it takes the
// write lock (BEGIN IMMEDIATE on SQLite; a transaction on PostgreSQL),
// writes about probeBytes, and rolls back — nothing is committed and
// nothing fsynced, so it is cheap enough for a readiness probe. The error
// wraps ErrUnavailable (or ErrReadOnly, ErrClosed).
//
// At most one probe runs at a time, whoever asks: it shares the single
// writing connection with the audit writer, so a pile of probes behind a
// locked store would delay audit records. A caller whose ctx ends first
// gets ErrUnavailable (a store that cannot take the lock in time is not
// ready) while the probe finishes in the background, bounded by the busy
// timeout.
func (db *DB) Writable(ctx context.Context) error {
	if err := db.writableCtx(ctx, "probe"); err != nil {
		return err
	}
	db.probeMu.Lock()
	run := db.probing
	if run == nil {
		run = &probeRun{done: make(chan struct{})}
		db.probing = run
		go func() {
			run.err = db.probe()
			db.probeMu.Lock()
			db.probing = nil
			db.probeMu.Unlock()
			close(run.done)
		}()
	}
	db.probeMu.Unlock()
	select {
	case <-run.done:
		return run.err
	case <-ctx.Done():
		return fmt.Errorf("store: probe: %w: %w", ErrUnavailable, ctx.Err())
	}
}

// probeRun is one probe: done closes once err is set.
type probeRun struct {
	done chan struct{}
	err  error
}

func (db *DB) probe() error {
	ctx := context.Background() // bounded by the busy timeout, not a caller
	return db.inTx(ctx, "probe", txOpts{}, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, sqlProbe); err != nil {
			return unavailable("probe: writing", err)
		}
		return errRollback // nothing committed, nothing fsynced
	})
}
