package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// OpenSession implements [contexts.Store]. With a cap, the count, the
// evictions and the insert share one BEGIN IMMEDIATE transaction (on
// PostgreSQL, under the principal's advisory lock), so of many processes
// opening sessions for one principal at once none sees a slot another
// took, and the principal never holds more than maxOpen. An id already
// stored is [contexts.ErrExists], and then the transaction, evictions
// included, is rolled back.
func (db *DB) OpenSession(ctx context.Context, s *contexts.Session, maxOpen int, idle time.Duration) ([]*contexts.Session, error) {
	if err := db.writableCtx(ctx, "open session"); err != nil {
		return nil, err
	}
	args, err := sessionArgs(s)
	if err != nil {
		return nil, err
	}
	what := "opening session " + s.ID
	exists := fmt.Errorf("store: session %s: %w", s.ID, contexts.ErrExists)
	if maxOpen <= 0 {
		// No cap: one statement, nothing to count.
		return nil, insertOnce(ctx, db.w, what, sqlInsertSession, args, exists)
	}
	var evicted []*contexts.Session
	err = db.inTx(ctx, what, txOpts{locks: []string{lockSessionCap(s.Principal)}}, func(tx *sql.Tx) error {
		q, qargs := sqlCapSessions, []any{s.Principal, s.Transport}
		if idle > 0 {
			q, qargs = sqlCapSessionsLive, append(qargs, formatTime(s.CreatedAt.Add(-idle)))
		}
		live, err := queryAll(ctx, tx, scanSession, q, qargs...)
		if err != nil {
			return txReadError(ctx, what, err)
		}
		if n := len(live) - maxOpen + 1; n > 0 {
			if err := checkClose(s.ID, contexts.EvictReason, s.CreatedAt); err != nil {
				return err
			}
			for _, o := range live[:n] {
				if _, err := tx.ExecContext(ctx, sqlCloseSession, o.ID, formatTime(s.CreatedAt), contexts.EvictReason); err != nil {
					return writeError(ctx, what, err)
				}
				o.ClosedAt, o.CloseReason = storedTime(s.CreatedAt), contexts.EvictReason
				evicted = append(evicted, o)
			}
		}
		return insertOnce(ctx, tx, what, sqlInsertSession, args, exists)
	})
	if err != nil {
		return nil, err
	}
	return evicted, nil
}

// GetSession implements [contexts.Store] through the read pool, from
// memory while the store's change counter says the row is unchanged
// (statecache.go).
func (db *DB) GetSession(ctx context.Context, id string) (*contexts.Session, error) {
	return cachedByID(ctx, db, &db.sessRows, "session", id, sqlGetSession, scanSession, cloneSession)
}

// TouchSession implements [contexts.Store]. It runs on tool calls (at most
// once per touch interval), so it is one UPDATE by primary key without an
// fsync of its own: the call's audit record, committed after it, makes it
// durable (see beginDeferred).
func (db *DB) TouchSession(ctx context.Context, id string, now time.Time) error {
	if err := db.writableCtx(ctx, "touch session"); err != nil {
		return err
	}
	if !storableTime(now) {
		return fmt.Errorf("store: touch session %s: time outside years 1 to 9999: %w", id, contexts.ErrInvalid)
	}
	n, err := db.execDeferred(ctx, "touching session "+id, sqlTouchSession, id, formatTime(now))
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("store: open session %s: %w", id, contexts.ErrNotFound)
	}
	return nil
}

// CloseSession implements [contexts.Store]. A session that is already
// closed, or was never stored, was not open: false and no error, so
// closing is idempotent.
func (db *DB) CloseSession(ctx context.Context, id, reason string, now time.Time) (bool, error) {
	if err := db.writableCtx(ctx, "close session"); err != nil {
		return false, err
	}
	if err := checkClose(id, reason, now); err != nil {
		return false, err
	}
	n, err := db.execCount(ctx, "closing session "+id, sqlCloseSession, id, formatTime(now), reason)
	return n > 0, err
}

// CloseIdleSessions implements [contexts.Store]: it selects and closes the
// same rows in one BEGIN IMMEDIATE transaction, so a session touched by
// another process is either returned closed or left open, never both.
func (db *DB) CloseIdleSessions(ctx context.Context, idleBefore, now time.Time, reason string) ([]*contexts.Session, error) {
	if err := db.writableCtx(ctx, "close idle sessions"); err != nil {
		return nil, err
	}
	if err := checkClose("idle", reason, now); err != nil {
		return nil, err
	}
	if !storableTime(idleBefore) {
		return nil, fmt.Errorf("store: close idle sessions: idleBefore outside years 1 to 9999: %w", contexts.ErrInvalid)
	}
	const what = "closing idle sessions"
	var idle []*contexts.Session
	err := db.inTx(ctx, what, txOpts{locks: []string{lockIdleSweep}}, func(tx *sql.Tx) (err error) {
		before := formatTime(idleBefore)
		if idle, err = queryAll(ctx, tx, scanSession, db.d.idleSessions, before); err != nil {
			return txReadError(ctx, what, err)
		}
		if len(idle) == 0 {
			return errRollback // nothing to write: no commit, no fsync
		}
		res, err := tx.ExecContext(ctx, sqlCloseIdleSessions, before, formatTime(now), reason)
		if err != nil {
			return writeError(ctx, what, err)
		}
		if n, err := res.RowsAffected(); err != nil || n != int64(len(idle)) {
			// Unreachable while the write lock is held; refuse rather than
			// report sessions closed that may not be.
			return writeError(ctx, what, errors.Join(fmt.Errorf("closed %d of %d sessions", n, len(idle)), err))
		}
		return nil
	})
	if err != nil || len(idle) == 0 {
		return nil, err
	}
	for _, s := range idle {
		s.ClosedAt, s.CloseReason = storedTime(now), reason
	}
	return idle, nil
}

// ListSessions implements [contexts.Store] through the read pool.
func (db *DB) ListSessions(ctx context.Context, contextID string, openOnly bool) ([]*contexts.Session, error) {
	if err := db.readableCtx(ctx, "list sessions"); err != nil {
		return nil, err
	}
	if ok, err := db.hasContexts(ctx); err != nil || !ok {
		return nil, wrapErr("list sessions", err)
	}
	q, args := sqlListSessions(contextID, openOnly)
	out, err := queryAll(ctx, db.r, scanSession, q, args...)
	return out, wrapErr("list sessions", err)
}

// execCount runs one writing statement on the write pool and returns how
// many rows it changed.
func (db *DB) execCount(ctx context.Context, what, query string, args ...any) (int64, error) {
	res, err := db.w.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, writeError(ctx, what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, writeError(ctx, what, err)
	}
	if n > 0 {
	}
	return n, nil
}

// sessionArgs checks s and returns its values in sessionColumns order.
func sessionArgs(s *contexts.Session) ([]any, error) {
	if s == nil {
		return nil, fmt.Errorf("store: nil session: %w", contexts.ErrInvalid)
	}
	bad := func(field, reason string) error {
		return fmt.Errorf("store: session %q: %s %s: %w", s.ID, field, reason, contexts.ErrInvalid)
	}
	if s.ID == "" {
		return nil, bad("id", "required")
	}
	if field, reason := badText([]textField{
		{"id", s.ID}, {"context_id", s.ContextID}, {"principal", s.Principal},
		{"transport", s.Transport}, {"close_reason", s.CloseReason},
	}); field != "" {
		return nil, bad(field, reason)
	}
	for _, t := range []struct {
		field string
		t     time.Time
	}{{"created_at", s.CreatedAt}, {"last_seen", s.LastSeen}, {"closed_at", s.ClosedAt}} {
		if !storableTime(t.t) {
			return nil, bad(t.field, "outside years 1 to 9999")
		}
	}
	var elicitation int64
	if s.Elicitation {
		elicitation = 1
	}
	return []any{
		s.ID, s.ContextID, s.Principal, s.Transport, elicitation,
		formatTime(s.CreatedAt), formatTime(s.LastSeen), nullTime(s.ClosedAt), s.CloseReason,
	}, nil
}

// checkClose refuses a close that could not be stored exactly.
func checkClose(id, reason string, now time.Time) error {
	if field, why := badText([]textField{{"reason", reason}}); field != "" {
		return fmt.Errorf("store: closing session %s: %s %s: %w", id, field, why, contexts.ErrInvalid)
	}
	if !storableTime(now) || storedTime(now).IsZero() {
		// A zero closed_at would be NULL: the session would stay open.
		return fmt.Errorf("store: closing session %s: time zero or outside years 1 to 9999: %w", id, contexts.ErrInvalid)
	}
	return nil
}

// scanSession reads and decodes one row selected with sessionColumns; a
// missing row is sql.ErrNoRows, unwrapped.
func scanSession(row scanner) (*contexts.Session, error) {
	var (
		s                 contexts.Session
		elicitation       int64
		created, lastSeen string
		closed            sql.NullString
	)
	err := row.Scan(&s.ID, &s.ContextID, &s.Principal, &s.Transport, &elicitation,
		&created, &lastSeen, &closed, &s.CloseReason)
	if err != nil {
		return nil, err
	}
	bad := func(col string, err error) error {
		return badRow{fmt.Errorf("session %s: bad %s column: %w", s.ID, col, err)}
	}
	switch elicitation {
	case 0, 1:
		s.Elicitation = elicitation == 1
	default:
		return nil, bad("elicitation", fmt.Errorf("%d is not 0 or 1", elicitation))
	}
	if s.CreatedAt, err = parseTime(created); err != nil {
		return nil, bad("created_at", err)
	}
	if s.LastSeen, err = parseTime(lastSeen); err != nil {
		return nil, bad("last_seen", err)
	}
	if closed.Valid {
		if s.ClosedAt, err = parseTime(closed.String); err != nil {
			return nil, bad("closed_at", err)
		}
	}
	return &s, nil
}
