package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/airlock-dev/airlock/internal/policy/pinning"
)

const (
	sqlUpstreamPins    = `SELECT pin FROM upstream_pins WHERE upstream = $1 ORDER BY tool`
	sqlAllUpstreamPins = `SELECT pin FROM upstream_pins ORDER BY upstream, tool`
	sqlUpstreamPin     = `SELECT pin FROM upstream_pins WHERE upstream = $1 AND tool = $2`
	sqlUpsertPin       = `INSERT INTO upstream_pins (upstream, tool, state, pin, updated_at) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (upstream, tool) DO UPDATE SET state = excluded.state, pin = excluded.pin, updated_at = excluded.updated_at`
)

func lockUpstream(id string) string { return "airlock:upstream:" + id }

// UpstreamPins returns the pins of one upstream's tools (all upstreams for
// ""), ordered by upstream and tool.
func (db *DB) UpstreamPins(ctx context.Context, upstream string) ([]*pinning.Pin, error) {
	if err := db.readableCtx(ctx, "upstream pins"); err != nil {
		return nil, err
	}
	q, args := sqlAllUpstreamPins, []any(nil)
	if upstream != "" {
		q, args = sqlUpstreamPins, []any{upstream}
	}
	return scanPins(ctx, db.r, q, args...)
}

// UpstreamPin returns one tool's pin, or ErrNotFound.
func (db *DB) UpstreamPin(ctx context.Context, upstream, tool string) (*pinning.Pin, error) {
	if err := db.readableCtx(ctx, "upstream pin"); err != nil {
		return nil, err
	}
	var raw string
	err := db.r.QueryRowContext(ctx, sqlUpstreamPin, upstream, tool).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: pin %s/%s: %w", upstream, tool, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: pin %s/%s: %w", upstream, tool, err)
	}
	return decodePin(raw)
}

// UpdateUpstreamPins is the one way pins change: in one write transaction
// it reads the upstream's pins (by tool name), calls fn once with them and
// stores the pins fn returns (new or replaced; fn returns only what
// changed). PostgreSQL takes an advisory lock per upstream, so two
// instances observing one listing, or an observation racing an approval,
// cannot lose either write (SQLite's write lock does the same).
func (db *DB) UpdateUpstreamPins(ctx context.Context, upstream string, fn func(map[string]*pinning.Pin) ([]*pinning.Pin, error)) error {
	if err := db.writableCtx(ctx, "update upstream pins"); err != nil {
		return err
	}
	const what = "updating upstream pins"
	return db.inTx(ctx, what, txOpts{locks: []string{lockUpstream(upstream)}}, func(tx *sql.Tx) error {
		cur, err := scanPins(ctx, tx, sqlUpstreamPins, upstream)
		if err != nil {
			return err
		}
		byTool := make(map[string]*pinning.Pin, len(cur))
		for _, p := range cur {
			byTool[p.Tool] = p
		}
		next, err := fn(byTool)
		if err != nil {
			return err
		}
		if len(next) == 0 {
			return errRollback
		}
		now := formatTime(time.Now())
		for _, p := range slices.SortedFunc(slices.Values(next), func(a, b *pinning.Pin) int { return cmpString(a.Tool, b.Tool) }) {
			if p.Upstream != upstream || p.Tool == "" {
				return fmt.Errorf("store: pin %q/%q does not belong to upstream %q", p.Upstream, p.Tool, upstream)
			}
			raw, err := json.Marshal(p)
			if err != nil {
				return fmt.Errorf("store: encoding pin: %w", err)
			}
			if _, err := tx.ExecContext(ctx, sqlUpsertPin, p.Upstream, p.Tool, string(p.State), string(raw), now); err != nil {
				return writeError(ctx, what, err)
			}
		}
		return nil
	})
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func scanPins(ctx context.Context, q rowsQuerier, query string, args ...any) ([]*pinning.Pin, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: reading upstream pins: %w", err)
	}
	defer rows.Close()
	var out []*pinning.Pin
	for rows.Next() {
		var raw string
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("store: reading upstream pins: %w", err)
		}
		p, err := decodePin(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: reading upstream pins: %w", err)
	}
	return out, nil
}

func decodePin(raw string) (*pinning.Pin, error) {
	var p pinning.Pin
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return nil, fmt.Errorf("store: a stored pin is corrupt: %w", err)
	}
	return &p, nil
}
