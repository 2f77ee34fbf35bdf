package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// Head returns the chain head: the last record's seq and hash (0 and 64
// zeros for an empty chain), as committed now. With [DB.HashAt] it makes
// *DB a witness.Chain.
func (db *DB) Head(ctx context.Context) (int64, string, error) {
	if db.isClosed() {
		return 0, "", fmt.Errorf("store: head: %w", ErrClosed)
	}
	var seq int64
	var hash string
	if err := db.r.QueryRowContext(ctx, sqlReadHead).Scan(&seq, &hash); err != nil {
		return 0, "", fmt.Errorf("store: head: %w", err)
	}
	return seq, hash, nil
}

// HashAt returns the stored hash of record seq; ok is false when there is
// no such record. It trusts the row: [DB.Verify] is what checks it.
func (db *DB) HashAt(ctx context.Context, seq int64) (string, bool, error) {
	if err := db.auditReadable(ctx, "hash at"); err != nil {
		return "", false, err
	}
	var h []byte
	err := db.r.QueryRowContext(ctx, sqlHashAt, seq).Scan(&h)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("store: hash at %d: %w", seq, err)
	}
	return hashText(h), true, nil
}

// KillChange is one change of the kill switch, made first in the kill
// switch file (package killswitch) and recorded here afterwards.
type KillChange struct {
	// ID is the change's id from the kill switch file; it makes recording
	// idempotent across processes.
	ID      string
	Engaged bool
	By      string
	Reason  string
	// At is when the change was made. A change older than the last one
	// recorded is not recorded (see RecordKillSwitch).
	At time.Time
}

// RecordKillSwitch records a kill switch change once: in one BEGIN
// IMMEDIATE transaction it mirrors the state into the kill_switch setting
// and appends rec to the chain — unless a change with the same ID was
// already recorded (by this or any other process), in which case it does
// nothing and returns false. Any number of processes noticing the same
// change therefore leave exactly one audit record.
//
// It waits for the write lock up to the busy timeout and then fails with
// ErrUnavailable; the caller retries (the switch itself is already in the
// file and does not wait for this).
func (db *DB) RecordKillSwitch(ctx context.Context, ch KillChange, rec *audit.Record) (recorded bool, err error) {
	if db.w == nil {
		return false, fmt.Errorf("store: record kill switch: %w", ErrReadOnly)
	}
	if db.isClosed() {
		return false, fmt.Errorf("store: record kill switch: %w", ErrClosed)
	}
	if ch.ID == "" || ch.At.IsZero() {
		return false, fmt.Errorf("store: record kill switch: change without id or time: %w", ErrInvalidRecord)
	}
	r := *rec
	r.Instance = db.opts.Instance
	if err := normalize(&r, time.Now()); err != nil {
		return false, err
	}
	var (
		seq int64
		in  *interner
	)
	// Two instances noticing one change must not both record it.
	err = db.inTx(ctx, "kill switch record", txOpts{locks: []string{lockKillSwitch}, chain: true}, func(tx *sql.Tx) (err error) {
		var last, lastAt string
		switch err := tx.QueryRowContext(ctx, sqlGetSettingAt, settingKillChange).Scan(&last, &lastAt); {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return unavailable("reading last kill switch change", err)
		case last == ch.ID:
			return errRollback
		default:
			// A process that read an engage from the kill file and retried
			// past a later release must not record (and re-engage) it now.
			if t, err := parseTime(lastAt); err == nil && t.After(ch.At) {
				return errRollback
			}
		}
		v := "0"
		if ch.Engaged {
			v = "1"
		}
		at := formatTime(r.Time)
		if _, err := tx.ExecContext(ctx, sqlUpsertSetting, settingKillSwitch, v, ch.By, ch.Reason, at); err != nil {
			return unavailable("setting kill switch", err)
		}
		if _, err := tx.ExecContext(ctx, sqlUpsertSetting, settingKillChange, ch.ID, ch.By, ch.Reason, formatTime(ch.At)); err != nil {
			return unavailable("setting kill switch change", err)
		}
		db.head.take(db.d)
		in = db.interner(sqlTx{db, tx})
		seq, err = db.chainInTx(ctx, sqlTx{db, tx}, in, []*audit.Record{&r}, nil)
		return err
	})
	if err != nil || in == nil { // in is nil when the change was already recorded
		return false, err
	}
	in.commit()
	db.committed(seq)
	*rec = r
	return true, nil
}
