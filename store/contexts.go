package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/kit/percall"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// *DB is the [contexts.Store]: runtime contexts, transport sessions, limit
// usage and used challenges live in the store's file beside the audit trail
// and the declarations that are keyed to them, so that every Airlock
// process on the file serves the same contexts.
//
// The contract is the one documented on [contexts.Store] and checked by
// contextstest.StoreConformance (TestContextsConformance), with two handles
// on one file standing in for two processes. What this implementation adds:
//
//   - Durable before return, like [DB.Append]: a write returns nil only
//     after its transaction committed with synchronous=FULL; a failed
//     commit wraps [ErrUnavailable] and nothing was written.
//   - Read-modify-write (UpdateContext, UpdateUsage, OpenSession's cap,
//     CloseIdleSessions) runs in one BEGIN IMMEDIATE transaction, which
//     holds SQLite's write lock from the read to the commit. The callback
//     therefore runs at most once, and a slow one stalls every writer of
//     the file.
//   - Read-only handles ([OpenReadOnly]) read and refuse every write with
//     [ErrReadOnly] before running any callback. On a file no program has
//     migrated to contexts yet they find nothing.
//   - Values are refused with [contexts.ErrInvalid] before any write when
//     they could not be read back exactly: an empty id, an unknown phase,
//     text that is not UTF-8 or holds NUL (the PostgreSQL twin's TEXT
//     cannot), a time outside years 1 to 9999. Times come back in UTC to
//     the microsecond. The store stamps no time of its own on a context
//     or session: CreatedAt, UpdatedAt and LastSeen are the caller's.
var _ contexts.Store = (*DB)(nil)

// contextsVersion is the migration that created the contexts tables.
const contextsVersion = 3

// EnsureContext implements [contexts.Store]. An existing context is read
// without taking the write lock; otherwise the insert and the read back
// share one write transaction, and the primary key decides a race between
// processes.
func (db *DB) EnsureContext(ctx context.Context, c *contexts.Context) (*contexts.Context, error) {
	if err := db.writableCtx(ctx, "ensure context"); err != nil {
		return nil, err
	}
	args, err := contextArgs(c)
	if err != nil {
		return nil, err
	}
	if got, err := db.GetContext(ctx, c.ID); err == nil || !errors.Is(err, contexts.ErrNotFound) {
		return got, err
	}
	what := "ensuring context " + c.ID
	var got *contexts.Context
	err = db.inTx(ctx, what, txOpts{}, func(tx *sql.Tx) (err error) {
		if _, err := tx.ExecContext(ctx, sqlInsertContext, args...); err != nil {
			return writeError(ctx, what, err)
		}
		if got, err = scanContext(tx.QueryRowContext(ctx, sqlGetContext, c.ID)); err != nil {
			return txReadError(ctx, what, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return got, nil
}

// CreateContext implements [contexts.Store].
func (db *DB) CreateContext(ctx context.Context, c *contexts.Context) error {
	if err := db.writableCtx(ctx, "create context"); err != nil {
		return err
	}
	args, err := contextArgs(c)
	if err != nil {
		return err
	}
	if err := insertOnce(ctx, db.w, "creating context "+c.ID, sqlInsertContext, args,
		fmt.Errorf("store: context %s: %w", c.ID, contexts.ErrExists)); err != nil {
		return err
	}
	return nil
}

// GetContext implements [contexts.Store] through the read pool, so it works
// on a read-only handle and sees every committed write.
// From memory while the store's change counter says the row is unchanged
// (statecache.go).
func (db *DB) GetContext(ctx context.Context, id string) (*contexts.Context, error) {
	return cachedByID(ctx, db, &db.ctxRows, "context", id, sqlGetContext, scanContext, cloneContext)
}

// getByID reads one row of the contexts tables by primary key through the
// read pool: GetContext and GetSession. A file without those tables (an
// older file behind a read-only handle) has no such row.
func getByID[T any](ctx context.Context, db *DB, kind, id, query string, scan func(scanner) (T, error)) (T, error) {
	var zero T
	if err := db.readableCtx(ctx, "get "+kind); err != nil {
		return zero, err
	}
	if ok, err := db.hasContexts(ctx); err != nil || !ok {
		return zero, ctxNotFoundOr(kind, id, err)
	}
	st, err := db.reads.get(ctx, db.r, query)
	if err != nil {
		return zero, ctxNotFoundOr(kind, id, err)
	}
	v, err := scan(st.QueryRowContext(ctx, id))
	if err != nil {
		return zero, ctxNotFoundOr(kind, id, err)
	}
	return v, nil
}

// UpdateContext implements [contexts.Store]: read, mutate a copy, write
// back, in one BEGIN IMMEDIATE transaction; mutate runs at most once.
func (db *DB) UpdateContext(ctx context.Context, id string, mutate func(*contexts.Context) error) (*contexts.Context, error) {
	return db.updateContext(ctx, id, txOpts{}, mutate)
}

// UpdateContextDeferred is UpdateContext committed without an fsync of its
// own (see beginDeferred): durable with the next durable commit, which for
// a call is its audit record, committed before the call is answered. For a
// change only an answered call's record makes visible (a run's output
// pool listed in its context; derived.Pools.Add, issue 27).
func (db *DB) UpdateContextDeferred(ctx context.Context, id string, mutate func(*contexts.Context) error) (*contexts.Context, error) {
	return db.updateContext(ctx, id, txOpts{deferred: true}, mutate)
}

func (db *DB) updateContext(ctx context.Context, id string, o txOpts, mutate func(*contexts.Context) error) (*contexts.Context, error) {
	if err := db.writableCtx(ctx, "update context"); err != nil {
		return nil, err
	}
	what := "updating context " + id
	var cur *contexts.Context
	err := db.inTx(ctx, what, o, func(tx *sql.Tx) (err error) {
		cur, err = scanContext(tx.QueryRowContext(ctx, db.d.getContextForUpdate, id))
		if errors.Is(err, sql.ErrNoRows) {
			return ctxNotFoundOr("context", id, nil)
		}
		if err != nil {
			return txReadError(ctx, what, err)
		}
		if mutate != nil {
			if err := mutate(cur); err != nil {
				return err
			}
			// mutate may have kept a pointer to what it was given.
			cur = cur.Clone()
		}
		cur.ID = id
		args, err := contextArgs(cur)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, sqlUpdateContext, args...); err != nil {
			return writeError(ctx, what, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	normalizeContext(cur)
	return cur, nil
}

// ListContexts implements [contexts.Store]; the rows come from one
// statement, so from one consistent snapshot.
func (db *DB) ListContexts(ctx context.Context, principal string) ([]*contexts.Context, error) {
	if err := db.readableCtx(ctx, "list contexts"); err != nil {
		return nil, err
	}
	if ok, err := db.hasContexts(ctx); err != nil || !ok {
		return nil, wrapErr("list contexts", err)
	}
	q, args := sqlListContexts, []any(nil)
	if principal != "" {
		q, args = sqlListContextsOfPrincipal, []any{principal}
	}
	out, err := queryAll(ctx, db.r, scanContext, q, args...)
	if err != nil {
		return nil, wrapErr("list contexts", err)
	}
	return out, nil
}

// contextArgs checks c and returns its values in contextColumns order. It
// does not modify c.
func contextArgs(c *contexts.Context) ([]any, error) {
	if c == nil {
		return nil, fmt.Errorf("store: nil context: %w", contexts.ErrInvalid)
	}
	if err := checkContext(c); err != nil {
		return nil, err
	}
	// Always an array and an object, never null, so the columns read the
	// same whether the caller had nil or empty.
	pools, env := c.Pools, c.Env
	if pools == nil {
		pools = []string{}
	}
	if env == nil {
		env = map[string]string{}
	}
	poolsJSON, err := encodeJSON(pools)
	if err != nil {
		return nil, fmt.Errorf("store: context %s: encoding pools: %w", c.ID, err)
	}
	envJSON, err := encodeJSON(env)
	if err != nil {
		return nil, fmt.Errorf("store: context %s: encoding env: %w", c.ID, err)
	}
	return []any{
		c.ID, c.Parent, c.Principal, c.Role, c.Policy, c.PolicyVersion, c.Phase,
		poolsJSON, envJSON, formatTime(c.CreatedAt), c.CreatedBy, formatTime(c.UpdatedAt),
	}, nil
}

// checkContext refuses a context that could not be read back exactly, or
// that no context may hold (an unknown phase).
func checkContext(c *contexts.Context) error {
	bad := func(field, reason string) error {
		return fmt.Errorf("store: context %q: %s %s: %w", c.ID, field, reason, contexts.ErrInvalid)
	}
	if c.ID == "" {
		return bad("id", "required")
	}
	if !contexts.ValidPhase(c.Phase) {
		return bad("phase", fmt.Sprintf("%q is not planning or execution", c.Phase))
	}
	texts := []textField{
		{"id", c.ID}, {"parent", c.Parent}, {"principal", c.Principal}, {"role", c.Role},
		{"policy", c.Policy}, {"policy_version", c.PolicyVersion}, {"created_by", c.CreatedBy},
	}
	for i, p := range c.Pools {
		texts = append(texts, textField{fmt.Sprintf("pools[%d]", i), p})
	}
	for k, v := range c.Env {
		texts = append(texts, textField{"env key", k}, textField{"env[" + k + "]", v})
	}
	if field, reason := badText(texts); field != "" {
		return bad(field, reason)
	}
	for _, t := range []struct {
		field string
		t     time.Time
	}{{"created_at", c.CreatedAt}, {"updated_at", c.UpdatedAt}} {
		if !storableTime(t.t) {
			return bad(t.field, "outside years 1 to 9999")
		}
	}
	return nil
}

// badText returns the first field whose text could not be stored exactly
// and why, or "" when all can.
func badText(texts []textField) (field, reason string) {
	for _, t := range texts {
		switch {
		case !utf8.ValidString(t.s):
			return t.field, "not valid UTF-8"
		case strings.IndexByte(t.s, 0) >= 0:
			return t.field, "contains a NUL character"
		}
	}
	return "", ""
}

// scanContext reads and decodes one row selected with contextColumns. A
// missing row is sql.ErrNoRows, unwrapped; a row that does not decode was
// written behind the store's back and is an error, never a guess.
func scanContext(row scanner) (*contexts.Context, error) {
	var (
		c                        contexts.Context
		pools, env, created, upd string
	)
	err := row.Scan(&c.ID, &c.Parent, &c.Principal, &c.Role, &c.Policy, &c.PolicyVersion,
		&c.Phase, &pools, &env, &created, &c.CreatedBy, &upd)
	if err != nil {
		return nil, err
	}
	bad := func(col string, err error) error {
		return badRow{fmt.Errorf("context %s: bad %s column: %w", c.ID, col, err)}
	}
	if c.CreatedAt, err = parseTime(created); err != nil {
		return nil, bad("created_at", err)
	}
	if c.UpdatedAt, err = parseTime(upd); err != nil {
		return nil, bad("updated_at", err)
	}
	// json.Unmarshal, not decodeJSON's streaming decoder: a context is
	// read on every call (issue 11), and for a []string and a
	// map[string]string the two accept and refuse exactly the same column
	// text (no fields to be unknown; trailing data refused by both).
	if err := json.Unmarshal([]byte(pools), &c.Pools); err != nil {
		return nil, bad("pools", err)
	}
	if err := json.Unmarshal([]byte(env), &c.Env); err != nil {
		return nil, bad("env", err)
	}
	normalizeContext(&c)
	return &c, nil
}

// normalizeContext makes c what reading it back gives: times in UTC to the
// microsecond, no pools or env as nil rather than empty.
func normalizeContext(c *contexts.Context) {
	c.CreatedAt, c.UpdatedAt = storedTime(c.CreatedAt), storedTime(c.UpdatedAt)
	if len(c.Pools) == 0 {
		c.Pools = nil
	}
	if len(c.Env) == 0 {
		c.Env = nil
	}
}

// writableCtx refuses a write through a read-only or closed handle, or
// with a done ctx, before anything runs.
func (db *DB) writableCtx(ctx context.Context, op string) error {
	if db.w == nil {
		return fmt.Errorf("store: %s: %w", op, ErrReadOnly)
	}
	// A call that writes what its probe covers probes again for its next
	// read (statecache.go): it must see its own write.
	percall.From(ctx).Forget()
	return db.readableCtx(ctx, op)
}

// readableCtx refuses a read through a closed handle or with a done ctx.
func (db *DB) readableCtx(ctx context.Context, op string) error {
	if db.isClosed() {
		return fmt.Errorf("store: %s: %w", op, ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	return nil
}

// hasContexts reports whether the file has the contexts tables. A writable
// handle migrated the file when it opened it; a read-only one runs no
// migrations and may be on a file not yet upgraded (or upgraded while it
// is open), so it asks every time.
func (db *DB) hasContexts(ctx context.Context) (bool, error) {
	if db.w != nil {
		return true, nil
	}
	var v int64
	if err := db.r.QueryRowContext(ctx, sqlSchemaVersion).Scan(&v); err != nil {
		return false, fmt.Errorf("reading schema version: %w", err)
	}
	return v >= contextsVersion, nil
}

// ctxNotFoundOr maps a missing row (or table) to contexts.ErrNotFound and
// wraps any other error; kind is "context" or "session".
func ctxNotFoundOr(kind, id string, err error) error {
	if err == nil || errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: %s %s: %w", kind, id, contexts.ErrNotFound)
	}
	return fmt.Errorf("store: %s %s: %w", kind, id, err)
}

// badRow is a row that was read but does not decode: written behind the
// store's back, not a failure to reach the file.
type badRow struct{ error }

func (e badRow) Unwrap() error { return e.error }

// txReadError wraps the failure of a read inside a write transaction: a
// row that does not decode is reported as such, anything else as
// writeError does.
func txReadError(ctx context.Context, what string, err error) error {
	if errors.As(err, new(badRow)) {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	return writeError(ctx, what, err)
}

// wrapErr wraps a non-nil err with the operation; nil stays nil.
func wrapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("store: %s: %w", op, err)
}
