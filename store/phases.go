package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// settingPhasePrefix names the settings rows that carry an operator's
// phase for a session: "phase:<session id>".
const settingPhasePrefix = "phase:"

const sqlListPhases = `SELECT name, value FROM settings WHERE name LIKE 'phase:%'`

// SetSessionPhase records the phase an operator set for a session. A
// server holding that session applies it (runner polls SessionPhases).
func (db *DB) SetSessionPhase(ctx context.Context, sessionID, phase, by, reason string) error {
	if db.w == nil {
		return fmt.Errorf("store: set session phase: %w", ErrReadOnly)
	}
	if db.isClosed() {
		return fmt.Errorf("store: set session phase: %w", ErrClosed)
	}
	_, err := db.w.ExecContext(ctx, sqlUpsertSetting, settingPhasePrefix+sessionID, phase, by, reason, formatTime(time.Now()))
	if err != nil {
		return fmt.Errorf("store: set session phase: %w: %w", ErrUnavailable, err)
	}
	return nil
}

// SessionPhases returns every phase an operator has set, by session id.
func (db *DB) SessionPhases(ctx context.Context) (map[string]string, error) {
	if db.isClosed() {
		return nil, fmt.Errorf("store: session phases: %w", ErrClosed)
	}
	rows, err := db.r.QueryContext(ctx, sqlListPhases)
	if err != nil {
		return nil, fmt.Errorf("store: session phases: %w", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, fmt.Errorf("store: session phases: %w", err)
		}
		out[strings.TrimPrefix(name, settingPhasePrefix)] = value
	}
	return out, rows.Err()
}
