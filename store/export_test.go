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
