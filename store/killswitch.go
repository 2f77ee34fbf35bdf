package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
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
// On SQLite it asks PRAGMA data_version on a connection of its own, which
// changes only when another connection has committed to the file, and
// re-reads the row only then. On PostgreSQL — where the row is what every
// instance shares — it reads the row, through a statement prepared once
// (one round trip per call).
func (db *DB) KillSwitchEngaged(ctx context.Context) (bool, error) {
	if db.isClosed() {
		return true, fmt.Errorf("store: kill switch: %w", ErrClosed)
	}
	if db.d == postgresDialect {
		st, err := db.reads.get(ctx, db.r, sqlGetSetting)
		if err != nil {
			return true, fmt.Errorf("store: kill switch: %w", err)
		}
		var v string
		return parseKillSwitch(st.QueryRowContext(ctx, settingKillSwitch).Scan(&v), v)
	}
	return db.kill.engaged(ctx)
}

// killCache holds the kill switch as last read on conn, and conn's
// data_version at or before that read.
type killCache struct {
	mu   sync.Mutex
	conn *sql.Conn
	// Statements prepared once on conn: the hot path parses no SQL.
	probe, get *sql.Stmt
	valid      bool
	version    int64
	on         bool
	// probes and reads count data_version probes and setting reads, for
	// tests and benchmarks.
	probes, reads int64
}

func (c *killCache) open(r *sql.DB) error {
	conn, err := r.Conn(context.Background())
	if err != nil {
		return fmt.Errorf("store: kill switch connection: %w", err)
	}
	ctx := context.Background()
	if c.probe, err = conn.PrepareContext(ctx, sqlDataVersion); err == nil {
		c.get, err = conn.PrepareContext(ctx, sqlGetSetting)
	}
	c.conn = conn
	if err != nil {
		return fmt.Errorf("store: kill switch statements: %w", err)
	}
	return nil
}

func (c *killCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	var errs []error
	for _, st := range []*sql.Stmt{c.probe, c.get} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	errs = append(errs, c.conn.Close())
	c.conn, c.probe, c.get = nil, nil, nil
	return errors.Join(errs...)
}

func (c *killCache) engaged(ctx context.Context) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return true, fmt.Errorf("store: kill switch: %w", ErrClosed)
	}
	var v int64
	if err := c.probe.QueryRowContext(ctx).Scan(&v); err != nil {
		c.valid = false
		return true, fmt.Errorf("store: kill switch: %w", err)
	}
	c.probes++
	if c.valid && v == c.version {
		return c.on, nil
	}
	// The version is read before the value: if a commit lands in between,
	// the value is newer than the version says and the next probe re-reads.
	// Never the other way round, which could serve a stale value.
	var s string
	err := c.get.QueryRowContext(ctx, settingKillSwitch).Scan(&s)
	on, err := parseKillSwitch(err, s)
	if err != nil {
		c.valid = false
		return true, err
	}
	c.reads++
	c.valid, c.version, c.on = true, v, on
	return on, nil
}
