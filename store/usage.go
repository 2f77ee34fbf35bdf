package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// UpdateUsage implements [contexts.Store]. It runs on every tool call that
// has a limit, so it is one short BEGIN IMMEDIATE transaction: one SELECT
// of the keys, fn, one upsert per value returned, commit — not fsynced on
// its own: the call's audit record, committed after it, makes it durable
// (beginDeferred). fn runs at most once, while the write lock is held.
//
// Values are stored as TEXT with their exact bytes, so a value must be
// valid UTF-8 without NUL (JSON or a decimal counter is); any other value
// is refused with [contexts.ErrInvalid] and nothing is stored. An empty
// value is stored and reads back as empty, not nil.
func (db *DB) UpdateUsage(ctx context.Context, keys []string, fn func(map[string][]byte) (map[string][]byte, error)) error {
	if err := db.writableCtx(ctx, "update usage"); err != nil {
		return err
	}
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	const what = "updating usage"
	// PostgreSQL: one advisory lock per key, in sorted order, stands in
	// for SQLite's write lock (a key may have no row yet to lock).
	locks := make([]string, len(keys))
	for i, k := range keys {
		locks[i] = lockUsage(k)
	}
	// No fsync of its own: the call's audit record, committed after it in
	// the same ordered log, makes it durable (see beginDeferred).
	return db.inTx(ctx, what, txOpts{locks: locks, deferred: true}, func(tx *sql.Tx) error {
		cur := make(map[string][]byte, len(keys))
		if len(keys) > 0 {
			if err := readUsage(ctx, tx, keys, cur); err != nil {
				return writeError(ctx, what, err)
			}
		}
		next, err := fn(cur)
		if err != nil {
			return err
		}
		if len(next) == 0 {
			return errRollback // nothing to store: no commit, no fsync
		}
		// Sorted, so that the statements, and any error, do not depend on
		// map order.
		now := formatTime(time.Now())
		for _, k := range slices.Sorted(maps.Keys(next)) {
			if err := checkUsage(k, next[k]); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, sqlUpsertUsage, k, string(next[k]), now); err != nil {
				return writeError(ctx, what, err)
			}
		}
		return nil
	})
}

// readUsage adds the stored values of keys to into. Each value is a fresh
// slice, so fn may keep or change it.
func readUsage(ctx context.Context, tx *sql.Tx, keys []string, into map[string][]byte) error {
	args := make([]any, len(keys))
	for i, k := range keys {
		args[i] = k
	}
	rows, err := tx.QueryContext(ctx, sqlGetUsages(len(keys)), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		into[k] = []byte(v)
	}
	return rows.Err()
}

// Usage implements [contexts.Store] through the read pool.
func (db *DB) Usage(ctx context.Context, key string) ([]byte, error) {
	if err := db.readableCtx(ctx, "usage"); err != nil {
		return nil, err
	}
	if ok, err := db.hasContexts(ctx); err != nil || !ok {
		return nil, wrapErr("usage", err)
	}
	var v string
	err := db.r.QueryRowContext(ctx, sqlGetUsage, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store: usage %s: %w", key, err)
	}
	return []byte(v), nil
}

// checkUsage refuses a key or value TEXT cannot hold exactly.
func checkUsage(key string, value []byte) error {
	bad := func(field, reason string) error {
		return fmt.Errorf("store: usage %q: %s %s: %w", key, field, reason, contexts.ErrInvalid)
	}
	if key == "" {
		return bad("key", "required")
	}
	if field, reason := badText([]textField{{"key", key}}); field != "" {
		return bad(field, reason)
	}
	if !utf8.Valid(value) {
		return bad("value", "not valid UTF-8")
	}
	if slices.Contains(value, 0) {
		return bad("value", "contains a NUL byte")
	}
	return nil
}

// UseChallenge implements [contexts.Store]: the nonce's primary key
// decides a replay, between processes too. The same transaction forgets
// the nonces past their expiry, so the table holds only live challenges;
// a challenge used again after its expiry is no longer recorded, and its
// caller refuses it as expired.
func (db *DB) UseChallenge(ctx context.Context, nonce string, expires time.Time) error {
	if err := db.writableCtx(ctx, "use challenge"); err != nil {
		return err
	}
	if nonce == "" {
		return fmt.Errorf("store: challenge nonce required: %w", contexts.ErrInvalid)
	}
	if field, reason := badText([]textField{{"nonce", nonce}}); field != "" {
		return fmt.Errorf("store: challenge %s %s: %w", field, reason, contexts.ErrInvalid)
	}
	if !storableTime(expires) {
		return fmt.Errorf("store: challenge expiry outside years 1 to 9999: %w", contexts.ErrInvalid)
	}
	const what = "using challenge"
	return db.inTx(ctx, what, txOpts{}, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, sqlForgetChallenges, formatTime(time.Now())); err != nil {
			return writeError(ctx, what, err)
		}
		return insertOnce(ctx, tx, what, sqlInsertChallenge, []any{nonce, formatTime(expires)},
			fmt.Errorf("store: challenge: %w", contexts.ErrReplayed))
	})
}
