package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/store/pgtest"
)

// testdata/v4.db was written by the store as of schema version 4 (commit
// d3dfa20, before the compact rows), by a program that appended 80 varied
// records through store.Append: two instances (v1 and v2 hashes), invalid
// UTF-8 and NUL in reasons and error texts, empty args and extra, the
// earliest storable time, negative numbers.

// copyV4 copies the version-4 fixture into a fresh directory and runs
// each tamper statement on the copy (see v4Tamper).
func copyV4(t *testing.T, tamper ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "v4.db"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "airlock.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, sql := range tamper {
		v4Tamper(t, path, sql)
	}
	return path
}

// v4Tamper runs sql on a version-4 file, as someone with write access did
// before the upgrade.
func v4Tamper(t *testing.T, path, sql string) {
	t.Helper()
	raw, err := openPool(path, "rw", time.Second, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(sql); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateV4File: a file written by the old code migrates to the
// compact rows, every old record keeps verifying under its old hash, and
// the chain goes on; a record edited before the upgrade is still caught
// after it, at the same seq; an unconvertible row stops Open instead of
// being dropped.
func TestMigrateV4File(t *testing.T) {
	ctx := context.Background()
	t.Run("intact", func(t *testing.T) {
		path := copyV4(t)
		v4Head := readV4Head(t, path)
		db := openAt(t, path, nil)
		res, err := db.Verify(ctx)
		if err != nil || !res.OK || res.Records != 80 {
			t.Fatalf("Verify after migration = %+v, %v", res, err)
		}
		seq, head, err := db.Head(ctx)
		if err != nil || seq != 80 || head != v4Head {
			t.Fatalf("Head = %d %s, %v; want 80 %s", seq, head, err, v4Head)
		}
		recs, err := db.Tail(ctx, 80)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.ComputeHash() != r.Hash {
				t.Fatalf("record %d reads back with different contents", r.Seq)
			}
		}
		if r := recs[5]; r.Error != "disk said no: \x00\xfe" || r.Args != nil || r.Instance != "" {
			t.Errorf("record 6 = %+v", r)
		}
		if r := recs[79]; r.Instance != "serve.vm.1.abc" || !strings.HasPrefix(string(r.Extra), `{"bytes":228`) {
			t.Errorf("record 80 = %+v", r)
		}
		for range 5 {
			if err := db.Append(ctx, &audit.Record{Outcome: audit.OutcomeOK, Reason: "after the upgrade"}); err != nil {
				t.Fatal(err)
			}
		}
		if res, err := db.Verify(ctx); err != nil || !res.OK || res.Records != 85 {
			t.Fatalf("Verify after appending = %+v, %v", res, err)
		}
	})
	t.Run("tampered before the upgrade", func(t *testing.T) {
		db := openAt(t, copyV4(t, `UPDATE audit_log SET reason = 'nothing to see' WHERE seq = 23`), nil)
		res, err := db.Verify(ctx)
		if err != nil || res.OK || res.FirstBad != 23 || !strings.Contains(res.Problem, "edited") {
			t.Fatalf("Verify = %+v, %v; want record 23 edited", res, err)
		}
	})
	t.Run("hash not hex", func(t *testing.T) {
		db := openAt(t, copyV4(t, `UPDATE audit_log SET hash = 'ff' WHERE seq = 7`), nil)
		res, err := db.Verify(ctx)
		if err != nil || res.OK || res.FirstBad != 7 {
			t.Fatalf("Verify = %+v, %v; want record 7 bad", res, err)
		}
		if h, _, _ := db.HashAt(ctx, 7); h != "ff" {
			t.Errorf("HashAt(7) = %q, want the stored text", h)
		}
	})
	t.Run("unconvertible", func(t *testing.T) {
		path := copyV4(t, `UPDATE audit_log SET recorded_at = 'yesterday' WHERE seq = 9`)
		db, err := Open(path, nil)
		if err == nil {
			db.Close()
			t.Fatal("Open converted a row with an unreadable time")
		}
		if !errors.Is(err, errUnconvertible) || !strings.Contains(err.Error(), "record 9") {
			t.Fatalf("Open: %v, want record 9 unconvertible", err)
		}
		ro, err := OpenReadOnly(path) // short of the conversion, nothing lost
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		if v, err := ro.schemaVersion(ctx, ro.r); err != nil || v != compactRowsVersion-1 {
			t.Fatalf("schema version %d, %v; want %d (each migration commits alone)", v, err, compactRowsVersion-1)
		}
	})
}

func readV4Head(t *testing.T, path string) string {
	t.Helper()
	raw, err := openPool(path, "ro", time.Second, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var h string
	if err := raw.QueryRow(sqlReadHead).Scan(new(int64), &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// sqlV4Insert is the version-4 insert, frozen here to build version-4
// databases the way the old store did.
const sqlV4Insert = `INSERT INTO audit_log (` + sqlV4Columns + `) VALUES
	($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
	 $18, $19, $20, $21, $22, $23, $24, $25, $26)`

// buildV4 brings w (a pool on an empty database of dialect d) to schema
// version 4 and appends n records the way the version-4 store did: the
// chain in Go, every field as its exact bytes (BYTEA on PostgreSQL, TEXT
// in SQLite), times as fixed-width text, hashes as hex text.
func buildV4(t *testing.T, w *sql.DB, d *dialect, n int) {
	t.Helper()
	ctx := context.Background()
	migrateTo(t, w, d, 4)
	prev := genesisHash
	for i := 1; i <= n; i++ {
		r := audit.Record{Seq: int64(i), Time: time.Date(2026, 6, 7, 12, 0, 0, i*1000, time.UTC).Truncate(time.Microsecond),
			SessionID: fmt.Sprintf("s%d", i%3), Principal: "alice", Tool: "read_pool_file",
			Reason: fmt.Sprintf("reason \xff\x00 %d", i%5), Outcome: audit.OutcomeOK, DurationMicros: int64(i),
			OutputBytes: -int64(i), Truncated: i%2 == 0, Extra: []byte(`{"k":1}`), PrevHash: prev}
		if i%4 == 0 {
			r.Instance = "old-instance"
		}
		if i%3 != 0 {
			r.Args = []byte(fmt.Sprintf(`{"i":%d}`, i))
		}
		r.Hash = r.ComputeHash()
		prev = r.Hash
		bs := func(s string) any {
			if d == postgresDialect {
				return []byte(s)
			}
			return s
		}
		var trunc int64
		if r.Truncated {
			trunc = 1
		}
		_, err := w.ExecContext(ctx, sqlV4Insert, r.Seq, formatTime(r.Time), bs(r.SessionID), bs(r.ContextID),
			bs(r.Principal), bs(r.Role), bs(r.Transport), bs(r.Tool), bs(r.Capability), bs(r.Tier), bs(r.Phase),
			bs(r.Decision), bs(r.RuleID), bs(r.Reason), bs(string(r.Args)), bs(string(r.Outcome)), bs(r.Violation),
			bs(r.ErrorRef), bs(r.Error), r.DurationMicros, r.OutputBytes, trunc, bs(string(r.Extra)),
			r.PrevHash, r.Hash, r.Instance)
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.ExecContext(ctx, sqlUpdateHead, int64(n), prev); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateV4 runs the version-4 to 6 conversion (upstream pins, 5, in between) on both backends over
// more rows than one conversion page.
func TestMigrateV4(t *testing.T) {
	const n = convertPage + 234
	ctx := context.Background()
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "v4.db")
		w := rawSQLite(t, path)
		buildV4(t, w, sqliteDialect, n)
		w.Close()
		db := openAt(t, path, nil)
		if res, err := db.Verify(ctx); err != nil || !res.OK || res.Records != n {
			t.Fatalf("Verify = %+v, %v", res, err)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.DSN(t)
		w, err := sql.Open("pgx", dsn)
		if err != nil {
			t.Fatal(err)
		}
		buildV4(t, w, postgresDialect, n)
		w.Close()
		db, err := OpenPostgres(dsn, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if res, err := db.Verify(ctx); err != nil || !res.OK || res.Records != n {
			t.Fatalf("Verify = %+v, %v", res, err)
		}
		recs, err := db.Tail(ctx, 3)
		if err != nil || len(recs) != 3 || recs[2].Reason != "reason \xff\x00 "+fmt.Sprint(n%5) {
			t.Fatalf("Tail = %+v, %v", recs, err)
		}
	})
}

// TestReadOnlyOnV4: a read-only handle (audit verify, tail, export beside
// a server of the old version) on a file not yet converted says so, with a
// typed error, instead of failing on a missing table; once a writable
// Open converted the file, the same handle reads it.
func TestReadOnlyOnV4(t *testing.T) {
	ctx := context.Background()
	path := copyV4(t)
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.Verify(ctx); !errors.Is(err, ErrSchemaTooOld) {
		t.Fatalf("Verify on a version-4 file: %v, want ErrSchemaTooOld", err)
	}
	if _, err := ro.Tail(ctx, 3); !errors.Is(err, ErrSchemaTooOld) {
		t.Fatalf("Tail on a version-4 file: %v, want ErrSchemaTooOld", err)
	}
	db, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if res, err := ro.Verify(ctx); err != nil || !res.OK || res.Records != 80 {
		t.Fatalf("Verify after the conversion = %+v, %v", res, err)
	}
}
