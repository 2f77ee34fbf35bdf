package store_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/store"
)

func TestOpenCreatesPrivateFiles(t *testing.T) {
	db, path := openTemp(t, nil)
	appendN(t, db, 0, 1) // make sure -wal and -shm exist
	for _, c := range []struct {
		path string
		mode fs.FileMode
	}{
		{filepath.Dir(path), 0o700 | fs.ModeDir},
		{path, 0o600},
		{path + "-wal", 0o600},
		{path + "-shm", 0o600},
	} {
		st, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode() != c.mode {
			t.Errorf("%s: mode %v, want %v", c.path, st.Mode(), c.mode)
		}
	}
}

func TestMigrationsAppliedOnce(t *testing.T) {
	db, path := openTemp(t, nil)
	appendN(t, db, 0, 3)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopening twice must neither reapply a migration (it would fail on
	// CREATE TABLE or duplicate its schema_migrations row) nor lose data.
	for range 2 {
		db, err := store.Open(path, nil)
		if err != nil {
			t.Fatalf("reopen: %v", err)
		}
		mustVerify(t, db, 3)
		db.Close()
	}
	raw := store.RawOpen(t, path)
	var n, max int64
	if err := raw.QueryRow(`SELECT COUNT(*), MAX(version) FROM schema_migrations`).Scan(&n, &max); err != nil {
		t.Fatal(err)
	}
	if n != max || n < 1 {
		t.Fatalf("schema_migrations has %d rows up to version %d; want one row per version", n, max)
	}
}

func TestSchemaTooNew(t *testing.T) {
	db, path := openTemp(t, nil)
	db.Close()
	raw := store.RawOpen(t, path)
	if _, err := raw.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 'x')`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	for name, open := range map[string]func() error{
		"Open":         func() error { db, err := store.Open(path, nil); closeIf(db); return err },
		"OpenReadOnly": func() error { db, err := store.OpenReadOnly(path); closeIf(db); return err },
	} {
		if err := open(); !errors.Is(err, store.ErrSchemaTooNew) {
			t.Errorf("%s: err = %v, want ErrSchemaTooNew", name, err)
		}
	}
}

func closeIf(db *store.DB) {
	if db != nil {
		db.Close()
	}
}

func TestOpenReadOnly(t *testing.T) {
	dir := t.TempDir()
	notStore := filepath.Join(dir, "plain.db")
	raw := store.RawOpen(t, notStore)
	if _, err := raw.Exec(`CREATE TABLE t (x TEXT)`); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not sqlite ", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		wantErr error
		wantMsg string
	}{
		{"missing file", filepath.Join(dir, "nope.db"), store.ErrNotFound, "no store at"},
		{"directory", dir, nil, "not a regular file"},
		{"sqlite but not a store", notStore, nil, "not an Airlock store"},
		{"not sqlite", garbage, nil, "not a database"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := store.OpenReadOnly(tt.path)
			if err == nil {
				db.Close()
				t.Fatal("OpenReadOnly succeeded")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("err = %q, want it to mention %q", err, tt.wantMsg)
			}
		})
	}
	if _, err := store.OpenReadOnly(filepath.Join(dir, "nope.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want it to wrap fs.ErrNotExist too", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.db")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenReadOnly of a missing file created it: %v", err)
	}
}

func TestReadOnlyCannotWrite(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t, nil)
	appendN(t, db, 0, 2)
	if _, err := db.Key(ctx, "existing"); err != nil {
		t.Fatal(err)
	}
	ro := openRO(t, path)

	mustVerify(t, ro, 2)
	if recs, err := ro.Tail(ctx, 5); err != nil || len(recs) != 2 {
		t.Fatalf("Tail = %d records, %v", len(recs), err)
	}
	if _, err := ro.Key(ctx, "existing"); err != nil {
		t.Errorf("Key(existing) on read-only: %v", err)
	}
	if _, err := ro.Key(ctx, "absent"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Key(absent) on read-only: err = %v, want ErrNotFound", err)
	}
	if err := ro.Append(ctx, sample(9)); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("Append on read-only: err = %v, want ErrReadOnly", err)
	}
	if err := ro.SetKillSwitch(ctx, true, "op", "test"); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("SetKillSwitch on read-only: err = %v, want ErrReadOnly", err)
	}
	mustVerify(t, db, 2)
}

func TestOpenPathNeedsEscaping(t *testing.T) {
	// A name with URI metacharacters must name that file, not smuggle in
	// parameters such as mode=memory.
	dir := t.TempDir()
	path := filepath.Join(dir, "a?mode=memory#x%20y.db")
	db, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	appendN(t, db, 0, 1)
	db.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("store not at the literal path: %v", err)
	}
	ro := openRO(t, path)
	mustVerify(t, ro, 1)
}

func TestOpenRejectsBadOptions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	if db, err := store.Open(path, &store.Options{MaxBatch: -1}); err == nil {
		db.Close()
		t.Fatal("Open accepted a negative MaxBatch")
	}
}

// TestSQLite3CLIReadsStore checks the file is plain SQLite that the stock
// tools (and an operator) can open, and that it is in WAL mode on disk.
func TestSQLite3CLIReadsStore(t *testing.T) {
	cli := sqlite3CLI(t)
	db, path := openTemp(t, nil)
	appendN(t, db, 0, 3)
	out, err := exec.Command(cli, path, "PRAGMA journal_mode; SELECT COUNT(*) FROM audit_records;").CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3: %v\n%s", err, out)
	}
	if got := strings.Fields(string(out)); len(got) != 2 || got[0] != "wal" || got[1] != "3" {
		t.Fatalf("sqlite3 said %q, want wal and 3", out)
	}
}

func sqlite3CLI(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("sqlite3 CLI not installed")
	}
	return p
}
