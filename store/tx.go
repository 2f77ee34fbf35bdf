package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
)

// Every transaction the store writes in is set up here, by [DB.inTx], so
// that what each engine needs to keep a read-modify-write whole is written
// once:
//
//   - SQLite: the writing pool's BEGIN is BEGIN IMMEDIATE (_txlock in its
//     DSN, db.go), which takes the file's one write lock before the first
//     read, not at the first write, so no other connection, in this
//     process or another, commits between a transaction's read and its
//     write (TestDeclarationsTransitionAcrossHandles fails without it). A
//     lock held elsewhere is waited for up to the busy timeout.
//   - PostgreSQL: write transactions run concurrently at READ COMMITTED;
//     what has no row to lock FOR UPDATE takes the advisory locks the
//     caller names ([txOpts.locks]), released at commit or rollback. The
//     connections' lock_timeout is the busy timeout.
//
// A failure to begin, lock or commit wraps [ErrUnavailable] — except the
// caller's own cancellation (writeError), unless the transaction appends
// to the chain ([txOpts.chain]). What the callback returns is its own.

// txOpts says how [DB.inTx] sets a write transaction up. The zero value is
// a transaction whose commit is durable before inTx returns.
type txOpts struct {
	// locks are taken first, in this order (sorted by the caller where
	// there are several, so that two transactions cannot deadlock);
	// PostgreSQL's advisory locks ([DB.lockNames]), nothing on SQLite.
	locks []string
	// deferred: the commit is not fsynced on its own but by the next
	// durable commit ([DB.beginDeferred]).
	deferred bool
	// chain: the transaction appends to the audit chain. Any failure of
	// its set-up or commit wraps ErrUnavailable, even one the caller's ctx
	// caused: the record is not in the chain, and Append's and
	// RecordKillSwitch's callers act on exactly that (fail closed, retry).
	chain bool
}

// errRollback, returned by an [DB.inTx] callback, rolls the transaction
// back and makes inTx return nil: there was nothing to write, so no
// commit and no fsync.
var errRollback = errors.New("store: nothing to commit")

// inTx runs fn in one write transaction on the writing pool, set up as o
// says, and commits it when fn returns nil. Any other result of fn rolls
// the transaction back and is returned as it is (errRollback as nil); a
// failure to begin, lock or commit is wrapped naming what. When inTx
// returns nil, fn's writes are committed (and, unless deferred, durable).
func (db *DB) inTx(ctx context.Context, what string, o txOpts, fn func(tx *sql.Tx) error) error {
	failed := func(err error) error {
		if o.chain {
			return unavailable(what, err)
		}
		return writeError(ctx, what, err)
	}
	var (
		tx  *sql.Tx
		end = func() {}
		err error
	)
	if o.deferred {
		tx, end, err = db.beginDeferred(ctx)
	} else {
		tx, err = db.w.BeginTx(ctx, nil)
	}
	if err != nil {
		return failed(err)
	}
	defer end()
	defer tx.Rollback() // after a commit, a no-op
	if err := db.lockNames(ctx, tx, o.locks...); err != nil {
		return failed(err)
	}
	if err := fn(tx); err != nil {
		if err == errRollback {
			return nil
		}
		return err
	}
	if err := tx.Commit(); err != nil {
		return failed(err)
	}
	return nil
}

// beginDeferred begins a write transaction whose commit is not fsynced on
// its own: on SQLite the connection runs it with synchronous=NORMAL (in WAL
// mode the commit is written to the WAL, not synced), on PostgreSQL with
// synchronous_commit off. Either way it is durable as soon as any later
// commit is — the next audit record's — since both logs are flushed in
// order. For per-call state whose loss on a crash could only concern a call
// that was never answered (limit usage, a session's last_seen); never for
// the audit chain, declarations or anything an answer depends on.
//
// end must be called after Commit or Rollback; it puts the SQLite
// connection back to synchronous=FULL, or discards it if that fails, so an
// audit commit can never run on a NORMAL connection.
func (db *DB) beginDeferred(ctx context.Context) (tx *sql.Tx, end func(), err error) {
	if db.d.advisory { // PostgreSQL
		tx, err := db.w.BeginTx(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		if _, err := tx.ExecContext(ctx, `SET LOCAL synchronous_commit TO off`); err != nil {
			tx.Rollback()
			return nil, nil, err
		}
		return tx, func() {}, nil
	}
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return nil, nil, err
	}
	end = func() {
		// Not the caller's ctx: the reset must run even when it ended.
		if _, err := conn.ExecContext(context.Background(), `PRAGMA synchronous=FULL`); err != nil {
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}
	if _, err := conn.ExecContext(ctx, `PRAGMA synchronous=NORMAL`); err != nil {
		end()
		return nil, nil, err
	}
	if tx, err = conn.BeginTx(ctx, nil); err != nil {
		end()
		return nil, nil, err
	}
	return tx, end, nil
}

// lockNames takes, inside tx, the advisory locks of names (already in the
// order to take them); they are released at commit or rollback. On SQLite
// it does nothing: BEGIN IMMEDIATE already holds the one write lock.
func (db *DB) lockNames(ctx context.Context, tx *sql.Tx, names ...string) error {
	if !db.d.advisory {
		return nil
	}
	for _, n := range names {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, advisoryKey(n)); err != nil {
			return fmt.Errorf("locking %s: %w", n, err)
		}
	}
	return nil
}

// advisoryKey maps a lock name to PostgreSQL's 64-bit advisory lock space.
// Two names sharing a key only serialise more than needed.
func advisoryKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(binary.BigEndian.Uint64(h.Sum(nil)))
}

// snapshot begins a read transaction on the reading pool in which every
// read sees one state of the store, while other connections and instances
// write: SQLite's read transaction already is one; PostgreSQL needs
// REPEATABLE READ (dialect.verifyTx). The caller rolls it back.
func (db *DB) snapshot(ctx context.Context) (*sql.Tx, error) {
	return db.r.BeginTx(ctx, db.d.verifyTx)
}
