package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/store/pgtest"
)

// demoRecord is a typical call of the demo: read_pool_file of a trusted
// pool's file over stdio, as `airlock serve` records it (copied from a
// live record; one session per 50 calls).
func demoRecord(i int) *audit.Record {
	return &audit.Record{
		Time:      time.Date(2026, 11, 23, 16, 8, 32, 0, time.UTC).Add(time.Duration(i) * 9731 * time.Microsecond),
		SessionID: fmt.Sprintf("c728938f-e2c1-4831-af7a-%012x", i/50),
		ContextID: "ctx_b1ecdb14153956781c3864d9",
		Principal: "local", Role: "local", Transport: "stdio", Tool: "read_pool_file",
		Capability: "pool.read", Tier: "read", Phase: "execution", Decision: "allow",
		RuleID:  "allow:pool.*",
		Reason:  `capability matches allow pattern "pool.*" of policy "base"`,
		Args:    []byte(`{"path":"regions.csv","pool":"sales"}`),
		Outcome: audit.OutcomeOK, DurationMicros: int64(1500 + i%700), OutputBytes: 228,
		Extra:    []byte(`{"bytes":228,"offset":0,"path":"regions.csv","pool":"sales","sha256":"2a26e6856d55cdefbdfe41220614a41d238869b9fab46f755847fd9eee96a69c"}`),
		Instance: "serve.vm.27467.aec63f",
	}
}

// sizeRecords is how many records the size benchmark writes.
const sizeRecords = 20_000

// BenchmarkBytesPerRecord reports the storage one demo call's audit record
// takes (issue 11: ≤ 400 B), against the version-4 rows in the same run:
// on SQLite the growth of the file after sizeRecords records and a
// checkpoint, divided by sizeRecords; on PostgreSQL the growth of
// pg_total_relation_size of the audit tables (indexes and TOAST included).
func BenchmarkBytesPerRecord(b *testing.B) {
	recs := demoRecordsChained(b, sizeRecords)
	b.Run("sqlite", func(b *testing.B) {
		for range b.N {
			v5, v4 := sqliteSizes(b, recs)
			b.ReportMetric(v5, "B/record")
			b.ReportMetric(v4, "v4-B/record")
			b.ReportMetric(v5/v4, "ratio")
		}
	})
	b.Run("postgres", func(b *testing.B) {
		for range b.N {
			dsn := pgtest.DSN(b)
			db, err := OpenPostgres(dsn, nil)
			if err != nil {
				b.Fatal(err)
			}
			before := pgSize(b, db.w, "audit_records", "audit_strings")
			writeRecords(b, db, recs)
			v5 := float64(pgSize(b, db.w, "audit_records", "audit_strings")-before) / sizeRecords
			db.Close()
			w, err := sql.Open("pgx", pgtest.DSN(b))
			if err != nil {
				b.Fatal(err)
			}
			migrateTo(b, w, postgresDialect, 4)
			before = pgSize(b, w, "audit_log")
			insertV4(b, w, postgresDialect, recs)
			v4 := float64(pgSize(b, w, "audit_log")-before) / sizeRecords
			w.Close()
			b.ReportMetric(v5, "B/record")
			b.ReportMetric(v4, "v4-B/record")
			b.ReportMetric(v5/v4, "ratio")
		}
	})
}

// TestBytesPerRecord holds the figure to the bound, on SQLite.
func TestBytesPerRecord(t *testing.T) {
	v5, v4 := sqliteSizes(t, demoRecordsChained(t, 5000))
	t.Logf("%.0f B/record (version 4: %.0f)", v5, v4)
	if v5 > 400 {
		t.Errorf("%.0f bytes per record, want ≤ 400", v5)
	}
}

// demoRecordsChained returns n demo records chained from the genesis hash.
func demoRecordsChained(t testing.TB, n int) []*audit.Record {
	recs := make([]*audit.Record, n)
	prev := genesisHash
	for i := range recs {
		r := demoRecord(i)
		r.Seq, r.PrevHash = int64(i+1), prev
		r.Hash = r.ComputeHash()
		prev, recs[i] = r.Hash, r
	}
	return recs
}

// sqliteSizes returns the bytes per record of recs in a current store and
// in version-4 rows.
func sqliteSizes(t testing.TB, recs []*audit.Record) (v5, v4 float64) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "v5.db")
	db := openAt(t, path, nil)
	before := fileSize(t, path)
	writeRecords(t, db, recs)
	if _, err := db.w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	v5 = float64(fileSize(t, path)-before) / float64(len(recs))
	db.Close()

	path = filepath.Join(dir, "v4.db")
	w := rawSQLite(t, path)
	defer w.Close()
	migrateTo(t, w, sqliteDialect, 4)
	if _, err := w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	before = fileSize(t, path)
	insertV4(t, w, sqliteDialect, recs)
	if _, err := w.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	return v5, float64(fileSize(t, path)-before) / float64(len(recs))
}

// writeRecords stores recs (already chained) through the writer's own
// path, in transactions of 256.
func writeRecords(t testing.TB, db *DB, recs []*audit.Record) {
	ctx := context.Background()
	for i := 0; i < len(recs); i += 256 {
		batch := recs[i:min(i+256, len(recs))]
		reqs := make([]*appendReq, len(batch))
		for j, r := range batch {
			reqs[j] = &appendReq{ctx: ctx, rec: *r, done: make(chan error, 1)}
		}
		if err := db.writeRecords(reqs); err != nil {
			t.Fatal(err)
		}
	}
}

// insertV4 stores recs as version-4 rows.
func insertV4(t testing.TB, w *sql.DB, d *dialect, recs []*audit.Record) {
	ctx := context.Background()
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	bs := func(s string) any {
		if d == postgresDialect {
			return []byte(s)
		}
		return s
	}
	for _, r := range recs {
		_, err := tx.ExecContext(ctx, sqlV4Insert, r.Seq, formatTime(r.Time), bs(r.SessionID), bs(r.ContextID),
			bs(r.Principal), bs(r.Role), bs(r.Transport), bs(r.Tool), bs(r.Capability), bs(r.Tier), bs(r.Phase),
			bs(r.Decision), bs(r.RuleID), bs(r.Reason), bs(string(r.Args)), bs(string(r.Outcome)), bs(r.Violation),
			bs(r.ErrorRef), bs(r.Error), r.DurationMicros, r.OutputBytes, 0, bs(string(r.Extra)),
			r.PrevHash, r.Hash, r.Instance)
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

func fileSize(t testing.TB, path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// pgSize is the total size of tables, indexes and TOAST included, after a
// VACUUM so dead tuples do not count.
func pgSize(t testing.TB, q *sql.DB, tables ...string) int64 {
	var total int64
	for _, tb := range tables {
		if _, err := q.Exec(`VACUUM ` + tb); err != nil {
			t.Fatal(err)
		}
		var n int64
		if err := q.QueryRow(`SELECT pg_total_relation_size($1)`, tb).Scan(&n); err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}
