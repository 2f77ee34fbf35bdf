package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
)

// Helpers shared by the package's own tests; the exported ones serve
// package store_test as well (as export_test.go's hooks do).

// openAt opens the store at path; it is closed when the test ends.
func openAt(t testing.TB, path string, opts *Options) *DB {
	t.Helper()
	db, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// openOldReadOnly builds a SQLite file at schema version v, as the program
// of that version left it, and opens it read-only (which migrates
// nothing); the handle is closed when the test ends.
func openOldReadOnly(t testing.TB, v int64) (path string, ro *DB) {
	t.Helper()
	path = filepath.Join(t.TempDir(), fmt.Sprintf("v%d.db", v))
	raw := rawSQLite(t, path)
	migrateTo(t, raw, sqliteDialect, v)
	raw.Close()
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	return path, ro
}

// RawOpen opens a second, independent connection to the SQLite file, as
// an attacker or another program would; it is closed when the test ends.
func RawOpen(t testing.TB, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

// HoldWriteLock takes the SQLite file's one write lock through raw, as
// another process would (BEGIN IMMEDIATE), and returns the connection
// holding it: COMMIT or ROLLBACK on it lets go. It is closed when the test
// ends, before what was opened earlier in the test.
func HoldWriteLock(t testing.TB, raw *sql.DB) *sql.Conn {
	t.Helper()
	ctx := context.Background()
	lock, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
	if _, err := lock.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	return lock
}
