package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Health of the warm upstream sessions (issue 23 item 5). The sessions
// live in the processes that serve calls; each process writes, per
// upstream, what it holds and has seen into one row of its own (keyed by
// its instance), so the operator's side — another process, which never
// links the execution engine — reads it here.

const (
	sqlUpsertUpstreamHealth = `INSERT INTO upstream_health (instance, upstream, warm, restarts, calls, errors, last_error, last_error_at, latency_us, updated_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
	ON CONFLICT (instance, upstream) DO UPDATE SET warm = excluded.warm, restarts = excluded.restarts, calls = excluded.calls,
	errors = excluded.errors, last_error = excluded.last_error, last_error_at = excluded.last_error_at,
	latency_us = excluded.latency_us, updated_at = excluded.updated_at`
	sqlUpstreamHealth = `SELECT instance, upstream, warm, restarts, calls, errors, last_error, last_error_at, latency_us, updated_at
	FROM upstream_health ORDER BY upstream, instance`
)

// upstreamHealthMigration is migration 9, in the words of ddl.go.
var upstreamHealthMigration = migration{
	version: 9,
	name:    "health of warm upstream sessions, per serving instance",
	steps: []step{
		table{name: "upstream_health", key: "instance, upstream", cols: []column{
			{"instance", sortedText, notNull},
			{"upstream", sortedText, notNull},
			{"warm", bigint, notNull},
			{"restarts", bigint, notNull},
			{"calls", bigint, notNull},
			{"errors", bigint, notNull},
			{"last_error", text, notNull},
			{"last_error_at", text, notNull},
			{"latency_us", bigint, notNull},
			{"updated_at", text, notNull},
		}},
	},
}

// UpstreamHealth is one serving instance's view of one upstream.
type UpstreamHealth struct {
	Instance, Upstream string
	// Warm sessions held at UpdatedAt; Restarts of sessions whose process
	// ended by itself; Calls sent and Errors among them (the transport
	// failed), since the instance started.
	Warm                    int64
	Restarts, Calls, Errors int64
	LastError               string
	LastErrorAt             time.Time // zero: none
	Latency                 time.Duration
	UpdatedAt               time.Time
}

// PutUpstreamHealth writes h as this process's row for h.Upstream (its
// Instance is the store's; see Options.Instance).
func (db *DB) PutUpstreamHealth(ctx context.Context, h UpstreamHealth) error {
	if err := db.writableCtx(ctx, "upstream health"); err != nil {
		return err
	}
	errAt := ""
	if !h.LastErrorAt.IsZero() {
		errAt = formatTime(h.LastErrorAt)
	}
	// Deferred (no fsync of its own; durable with the next audit commit):
	// health is written after every call, and a synced commit of it held
	// the one writing connection for an fsync between two calls' own
	// commits (issue 23); a crash loses at most the figures since.
	err := db.inTx(ctx, "upstream health", txOpts{deferred: true}, func(tx *sql.Tx) error {
		_, err := db.execW(ctx, tx, sqlUpsertUpstreamHealth, db.opts.Instance, h.Upstream, h.Warm, h.Restarts, h.Calls, h.Errors,
			h.LastError, errAt, h.Latency.Microseconds(), formatTime(h.UpdatedAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("store: upstream health: %w: %w", ErrUnavailable, err)
	}
	return nil
}

// UpstreamHealthRows returns every instance's rows, by upstream.
func (db *DB) UpstreamHealthRows(ctx context.Context) ([]UpstreamHealth, error) {
	if err := db.readableCtx(ctx, "upstream health"); err != nil {
		return nil, err
	}
	out, err := queryAll(ctx, db.r, scanUpstreamHealth, sqlUpstreamHealth)
	if err != nil {
		return nil, fmt.Errorf("store: upstream health: %w", err)
	}
	return out, nil
}

// scanUpstreamHealth reads one selected row of sqlUpstreamHealth.
func scanUpstreamHealth(row scanner) (UpstreamHealth, error) {
	var h UpstreamHealth
	var errAt, at string
	var us int64
	err := row.Scan(&h.Instance, &h.Upstream, &h.Warm, &h.Restarts, &h.Calls, &h.Errors, &h.LastError, &errAt, &us, &at)
	if err != nil {
		return h, err
	}
	h.Latency = time.Duration(us) * time.Microsecond
	if errAt != "" {
		if h.LastErrorAt, err = parseTime(errAt); err != nil {
			return h, err
		}
	}
	h.UpdatedAt, err = parseTime(at)
	return h, err
}
