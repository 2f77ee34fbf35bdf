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
	// Every read of a pin brings its decision (override, edited
	// description) along; decodePin keeps it only for the approved digest.
	sqlPinsSelect      = `SELECT p.pin, d.decision FROM upstream_pins p LEFT JOIN upstream_decisions d ON d.upstream = p.upstream AND d.tool = p.tool`
	sqlUpstreamPins    = sqlPinsSelect + ` WHERE p.upstream = $1 ORDER BY p.tool`
	sqlAllUpstreamPins = sqlPinsSelect + ` ORDER BY p.upstream, p.tool`
	sqlUpstreamPin     = sqlPinsSelect + ` WHERE p.upstream = $1 AND p.tool = $2`
	sqlUpsertPin       = `INSERT INTO upstream_pins (upstream, tool, state, pin, updated_at) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (upstream, tool) DO UPDATE SET state = excluded.state, pin = excluded.pin, updated_at = excluded.updated_at`
	sqlUpsertDecision = `INSERT INTO upstream_decisions (upstream, tool, digest, decision, updated_at) VALUES ($1, $2, $3, $4, $5)
	ON CONFLICT (upstream, tool) DO UPDATE SET digest = excluded.digest, decision = excluded.decision, updated_at = excluded.updated_at`
	// A decision belongs to one approved digest: any other is dropped.
	sqlDropStaleDecision = `DELETE FROM upstream_decisions WHERE upstream = $1 AND tool = $2 AND digest <> $3`
)

// pinWriterQueries are prepared for the writer (stmtcache.go): an HTTP
// upstream's listing is observed in a write transaction before every call
// (pin_check: every_call), and each warm call's health row is written
// after it; both parsed their SQL every time (issue 23).
var pinWriterQueries = []string{sqlUpstreamPins, sqlUpsertPin, sqlUpsertUpstreamHealth}

// upstreamDecisionsMigration is migration 8 (issue 25), in the words of
// ddl.go (listed at the end of the schema in migrations.go): one row per
// upstream tool holding the operator's decision about its approved
// definition — an override of the review's flags, the description the
// catalog shows instead of the upstream's — for one digest. It is
// written in the transaction that writes the pin (UpdateUpstreamPins)
// and dropped there when the pin's approved digest is another.
var upstreamDecisionsMigration = migration{
	version: 8,
	name:    "operator decisions on upstream tool definitions: overrides, edited descriptions",
	steps: []step{
		table{name: "upstream_decisions", key: "upstream, tool", cols: []column{
			{"upstream", sortedText, notNull},
			{"tool", sortedText, notNull},
			{"digest", text, notNull},
			{"decision", text, notNull},
			{"updated_at", text, notNull},
		}},
	},
}

func lockUpstream(id string) string { return "airlock:upstream:" + id }

// UpstreamPins returns the pins of one upstream's tools (all upstreams for
// ""), ordered by upstream and tool.
func (db *DB) UpstreamPins(ctx context.Context, upstream string) ([]*pinning.Pin, error) {
	if err := db.readableCtx(ctx, "upstream pins"); err != nil {
		return nil, err
	}
	if upstream == "" {
		return scanPins(ctx, db.r, sqlAllUpstreamPins)
	}
	// Prepared once (stmtcache.go): an HTTP upstream's listing is checked
	// against its pins before every call (upstream.Connector.Observe).
	st, err := db.reads.get(ctx, db.r, sqlUpstreamPins)
	if err != nil {
		return nil, fmt.Errorf("store: reading upstream pins: %w", err)
	}
	return scanPins(ctx, stmtRunner{st}, sqlUpstreamPins, upstream)
}

// UpstreamPinsByTool is UpstreamPins of one upstream by tool name: what
// UpdateUpstreamPins hands its fn, as the read pool has it.
func (db *DB) UpstreamPinsByTool(ctx context.Context, upstream string) (map[string]*pinning.Pin, error) {
	pins, err := db.UpstreamPins(ctx, upstream)
	if err != nil {
		return nil, err
	}
	return byTool(pins), nil
}

func byTool(pins []*pinning.Pin) map[string]*pinning.Pin {
	out := make(map[string]*pinning.Pin, len(pins))
	for _, p := range pins {
		out[p.Tool] = p
	}
	return out
}

// UpstreamPin returns one tool's pin, or ErrNotFound.
func (db *DB) UpstreamPin(ctx context.Context, upstream, tool string) (*pinning.Pin, error) {
	if err := db.readableCtx(ctx, "upstream pin"); err != nil {
		return nil, err
	}
	// Prepared once (stmtcache.go): every comm.mcp need reads its pin.
	st, err := db.reads.get(ctx, db.r, sqlUpstreamPin)
	if err != nil {
		return nil, fmt.Errorf("store: pin %s/%s: %w", upstream, tool, err)
	}
	p, err := scanPin(st.QueryRowContext(ctx, upstream, tool))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("store: pin %s/%s: %w", upstream, tool, ErrNotFound)
	}
	if err != nil && !errors.As(err, new(badRow)) {
		return nil, fmt.Errorf("store: pin %s/%s: %w", upstream, tool, err)
	}
	return p, err
}

// UpdateUpstreamPins is the one way pins change: in one write transaction
// it reads the upstream's pins (by tool name), calls fn once with them and
// stores the pins fn returns (new or replaced; fn returns only what
// changed). PostgreSQL takes an advisory lock per upstream, so two
// instances observing one listing, or an observation racing an approval,
// cannot lose either write (SQLite's write lock does the same). A pin's
// Decision is written with it when it belongs to the pin's approved
// digest; a decision for any other digest is dropped in the same
// transaction, so an override or an edited description never outlives
// the definition it was made for.
func (db *DB) UpdateUpstreamPins(ctx context.Context, upstream string, fn func(map[string]*pinning.Pin) ([]*pinning.Pin, error)) error {
	if err := db.writableCtx(ctx, "update upstream pins"); err != nil {
		return err
	}
	const what = "updating upstream pins"
	return db.inTx(ctx, what, txOpts{locks: []string{lockUpstream(upstream)}}, func(tx *sql.Tx) error {
		cur, err := scanPins(ctx, txExecer{db, tx}, sqlUpstreamPins, upstream)
		if err != nil {
			return err
		}
		next, err := fn(byTool(cur))
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
			if _, err := db.execW(ctx, tx, sqlUpsertPin, p.Upstream, p.Tool, string(p.State), string(raw), now); err != nil {
				return writeError(ctx, what, err)
			}
			if err := writeDecision(ctx, tx, p, now); err != nil {
				return writeError(ctx, what, err)
			}
		}
		return nil
	})
}

// writeDecision keeps p's decision if it is for the approved digest and
// drops any decision for another digest.
func writeDecision(ctx context.Context, tx *sql.Tx, p *pinning.Pin, now string) error {
	if d := p.Decision; d != nil && p.ApprovedDigest != "" && d.Digest == p.ApprovedDigest {
		raw, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("store: encoding decision: %w", err)
		}
		_, err = tx.ExecContext(ctx, sqlUpsertDecision, p.Upstream, p.Tool, d.Digest, string(raw), now)
		return err
	}
	_, err := tx.ExecContext(ctx, sqlDropStaleDecision, p.Upstream, p.Tool, p.ApprovedDigest)
	return err
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
	out, err := queryAll(ctx, q, scanPin, query, args...)
	if err != nil && !errors.As(err, new(badRow)) {
		return nil, fmt.Errorf("store: reading upstream pins: %w", err)
	}
	return out, err
}

// scanPin reads one selected pin and its decision (decodePin); a row
// that does not decode is a badRow, already saying what is wrong.
func scanPin(row scanner) (*pinning.Pin, error) {
	var raw string
	var dec sql.NullString
	if err := row.Scan(&raw, &dec); err != nil {
		return nil, err
	}
	p, err := decodePin(raw, dec)
	if err != nil {
		return nil, badRow{err}
	}
	return p, nil
}

// decodePin decodes a pin and, if it is for the pin's approved digest,
// its decision (a decision for another digest is never applied, even
// if a crash left it behind).
func decodePin(raw string, dec sql.NullString) (*pinning.Pin, error) {
	var p pinning.Pin
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return nil, fmt.Errorf("store: a stored pin is corrupt: %w", err)
	}
	if dec.Valid {
		var d pinning.Decision
		if err := json.Unmarshal([]byte(dec.String), &d); err != nil {
			return nil, fmt.Errorf("store: a stored decision on %s/%s is corrupt: %w", p.Upstream, p.Tool, err)
		}
		if p.ApprovedDigest != "" && d.Digest == p.ApprovedDigest {
			p.Decision = &d
		}
	}
	return &p, nil
}
