package store

import (
	"context"
	"fmt"
)

// Test hooks for package store_test.

// MigrationNames lists "version name" of the SQLite or PostgreSQL
// migrations.
func MigrationNames(postgres bool) []string {
	ms := migrations
	if postgres {
		ms = pgMigrations
	}
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%d %s", m.version, m.name))
	}
	return out
}

// ReadPoolRefusesWrite tries a write through db's read pool.
func ReadPoolRefusesWrite(db *DB) error {
	_, err := db.r.ExecContext(context.Background(), `DELETE FROM audit_records`)
	return err
}

// ForgetProvenance empties db's provenance cache, so its next read of a
// context is a full one.
func ForgetProvenance(db *DB) {
	db.prov.mu.Lock()
	db.prov.m = nil
	db.prov.mu.Unlock()
}

// ProvenanceCached is how many contexts db's provenance cache holds.
func ProvenanceCached(db *DB) int {
	db.prov.mu.Lock()
	defer db.prov.mu.Unlock()
	return len(db.prov.m)
}

// LoseNewestContent deletes a context's newest content row and sets the
// context's live totals back to what the rows left say, as losing the
// transaction that wrote the label would (a storage fault, or PostgreSQL
// with synchronous_commit off): the next label takes the lost one's seq.
func LoseNewestContent(db *DB, contextID string) error {
	ctx := context.Background()
	if _, err := db.w.ExecContext(ctx, `DELETE FROM provenance_content WHERE context_id = $1
	AND seq = (SELECT MAX(seq) FROM provenance_content WHERE context_id = $1)`, contextID); err != nil {
		return err
	}
	_, err := db.w.ExecContext(ctx, `UPDATE provenance_live SET
		next_seq = (SELECT COALESCE(MAX(seq), 0) + 1 FROM provenance_content WHERE context_id = $1),
		live_bytes = (SELECT COALESCE(SUM(bytes), 0) FROM provenance_content WHERE context_id = $1 AND evicted = 0),
		oldest_live = (SELECT COALESCE(MIN(CASE WHEN evicted = 0 THEN seq END), MAX(seq) + 1, 1) FROM provenance_content WHERE context_id = $1)
	WHERE context_id = $1`, contextID)
	return err
}
