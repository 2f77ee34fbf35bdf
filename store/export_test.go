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

// LoseNewestContent deletes a context's newest content row, as a crash of
// PostgreSQL can lose a label whose commit was deferred.
func LoseNewestContent(db *DB, contextID string) error {
	_, err := db.w.ExecContext(context.Background(), `DELETE FROM provenance_content WHERE context_id = $1
	AND seq = (SELECT MAX(seq) FROM provenance_content WHERE context_id = $1)`, contextID)
	return err
}
