package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// SetKillSwitch engages or releases the kill switch, recording who did it
// and why. The change is committed durably before it returns and is seen by
// every process that has the file open on its next check. Auditing the
// change is the caller's job (it has the session and principal context).
func (db *DB) SetKillSwitch(ctx context.Context, engaged bool, by, reason string) error {
	if db.w == nil {
		return fmt.Errorf("store: set kill switch: %w", ErrReadOnly)
	}
	if db.isClosed() {
		return fmt.Errorf("store: set kill switch: %w", ErrClosed)
	}
	v := "0"
	if engaged {
		v = "1"
	}
	_, err := db.w.ExecContext(ctx, sqlUpsertSetting, settingKillSwitch, v, by, reason, formatTime(time.Now()))
	if err != nil {
		return fmt.Errorf("store: set kill switch: %w: %w", ErrUnavailable, err)
	}
	return nil
}

// KillSwitch reads the kill switch from the file. A store where it was never
// set reports false. On any error it reports true (engaged) along with the
// error, so a caller that checks only the bool still fails closed.
func (db *DB) KillSwitch(ctx context.Context) (bool, error) {
	if db.isClosed() {
		return true, fmt.Errorf("store: kill switch: %w", ErrClosed)
	}
	return readKillSwitch(ctx, db.r)
}

func readKillSwitch(ctx context.Context, q querier) (bool, error) {
	var v string
	err := q.QueryRowContext(ctx, sqlGetSetting, settingKillSwitch).Scan(&v)
	return parseKillSwitch(err, v)
}

// parseKillSwitch interprets the result of reading the setting.
func parseKillSwitch(err error, v string) (bool, error) {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return true, fmt.Errorf("store: kill switch: %w", err)
	case v == "0":
		return false, nil
	default:
		// "1", and anything but a clean "0", is engaged: fail closed.
		return true, nil
	}
}

// KillSwitchEngaged is [DB.KillSwitch] for the per-call path: every call
// reads the setting itself, so a change committed before the call began
// is seen by it — by construction, not by how soon some goroutine
// refreshes a cache (issue 26 item 7, TestKillSwitchSeenByTheNextCheck).
// It is one probe of the store's state (statecache.go): on SQLite PRAGMA
// data_version on a connection of its own, which changes only when
// another connection has committed to the file, and the row re-read only
// then; on PostgreSQL the row, one round trip. Callers who ask while a
// probe runs wait for the next one, which serves them all.
func (db *DB) KillSwitchEngaged(ctx context.Context) (bool, error) {
	if db.isClosed() {
		return true, fmt.Errorf("store: kill switch: %w", ErrClosed)
	}
	st, err := db.kill.state(ctx)
	if err != nil {
		return true, err
	}
	return st.on, nil
}
