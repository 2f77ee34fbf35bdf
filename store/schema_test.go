package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testkit/golden"
	"github.com/airlock-dev/airlock/store/pgtest"
)

// The schema each migration leaves, as each engine's catalogue describes
// it, is golden: testdata/schema/sqlite.golden and postgres.golden were
// written by the hand-kept DDL of both engines (before the one description
// in migrations.go replaced them) and every later change of the DDL must
// leave them as they are. A store at any version, made by any earlier
// program, therefore has the schema this program would have made, and
// migrates to the same schema as a new one (TestSchemaGolden).

// schemaDump describes what a database holds of the schema: on SQLite
// sqlite_master as stored (the CREATE statements' exact text, which ALTER
// TABLE rewrites in place), on PostgreSQL the catalogue (columns with
// their types, collations and identity, constraints, indexes, triggers,
// functions with their source), the migrations recorded, and with seeded
// the rows migrations seed.
func schemaDump(t testing.TB, q *sql.DB, d *dialect, seeded bool) string {
	t.Helper()
	var b strings.Builder
	section := func(title, query string) {
		rows, err := q.Query(query)
		if err != nil {
			t.Fatalf("%s: %v", title, err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		fmt.Fprintf(&b, "## %s\n", title)
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("%s: %v", title, err)
			}
			parts := make([]string, len(vals))
			for i, v := range vals {
				parts[i] = v.String
				if !v.Valid {
					parts[i] = "NULL"
				}
			}
			fmt.Fprintf(&b, "%s\n", strings.Join(parts, " | "))
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", title, err)
		}
	}
	if d.advisory {
		const here = `current_schema()::regnamespace`
		section("columns", `SELECT table_name, column_name, data_type, is_nullable,
			column_default, collation_name, is_identity, identity_generation
			FROM information_schema.columns WHERE table_schema = current_schema()
			ORDER BY table_name, ordinal_position`)
		section("constraints", `SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
			FROM pg_constraint WHERE connamespace = `+here+` ORDER BY 1, 2`)
		section("indexes", `SELECT tablename, indexname, indexdef FROM pg_indexes
			WHERE schemaname = current_schema() ORDER BY 1, 2`)
		section("sequences", `SELECT sequencename, data_type::text, start_value, increment_by
			FROM pg_sequences WHERE schemaname = current_schema() ORDER BY 1`)
		section("triggers", `SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid)
			FROM pg_trigger WHERE NOT tgisinternal ORDER BY 1, 2`)
		section("functions", `SELECT proname, pg_get_function_arguments(p.oid), prorettype::regtype::text,
			l.lanname, prosrc FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang WHERE pronamespace = `+here+` ORDER BY 1`)
	} else {
		section("sqlite_master", `SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name`)
	}
	section("schema_migrations", `SELECT version, name FROM schema_migrations ORDER BY version`)
	if seeded && hasTable(t, q, d, "audit_head") {
		section("audit_head", `SELECT id, last_seq, last_hash FROM audit_head`)
	}
	return b.String()
}

func hasTable(t testing.TB, q *sql.DB, d *dialect, name string) bool {
	t.Helper()
	query := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = $1`
	if d.advisory {
		query = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1`
	}
	var n int
	if err := q.QueryRow(query, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// goldenSchema is the golden dump of d after each version, by version.
type goldenSchema map[int64]string

const goldenMark = "# version "

func goldenPath(d *dialect) string {
	return filepath.Join("testdata", "schema", d.name+".golden")
}

func readGolden(t *testing.T, d *dialect) goldenSchema {
	t.Helper()
	b, err := os.ReadFile(goldenPath(d))
	if err != nil {
		t.Fatalf("%v (run the test with -update to write it)", err)
	}
	g := goldenSchema{}
	for _, part := range strings.Split(string(b), goldenMark)[1:] {
		head, body, _ := strings.Cut(part, "\n")
		var v int64
		if _, err := fmt.Sscan(head, &v); err != nil {
			t.Fatalf("%s: bad section %q", goldenPath(d), head)
		}
		g[v] = body
	}
	return g
}

func writeGolden(t *testing.T, d *dialect, dumps goldenSchema) {
	t.Helper()
	var b strings.Builder
	for _, m := range d.migrations {
		fmt.Fprintf(&b, "%s%d: %s\n%s", goldenMark, m.version, m.name, dumps[m.version])
	}
	if err := os.MkdirAll(filepath.Dir(goldenPath(d)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goldenPath(d), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// schemaEngine is what TestSchemaGolden needs of one engine: a new, empty
// database, as a raw pool and as a store opened on it.
type schemaEngine struct {
	d     *dialect
	fresh func(t *testing.T) (raw *sql.DB, open func() (*DB, error))
}

// TestSchemaGolden: on each engine, for every version k, a database
// brought to k one migration at a time has the golden schema of k, and
// opening it as a store migrates it to the golden schema of the latest
// version — as does the version-4 file written by the old store.
func TestSchemaGolden(t *testing.T) {
	engines := []schemaEngine{
		{sqliteDialect, func(t *testing.T) (*sql.DB, func() (*DB, error)) {
			path := filepath.Join(t.TempDir(), "a.db")
			raw := rawSQLite(t, path)
			t.Cleanup(func() { raw.Close() })
			return raw, func() (*DB, error) { return Open(path, nil) }
		}},
		{postgresDialect, func(t *testing.T) (*sql.DB, func() (*DB, error)) {
			dsn := pgtest.DSN(t)
			raw, err := pgPool(dsn, Options{BusyTimeout: 5 * time.Second}, false, 2)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { raw.Close() })
			return raw, func() (*DB, error) { return OpenPostgres(dsn, nil) }
		}},
	}
	for _, e := range engines {
		t.Run(e.d.name, func(t *testing.T) { testSchemaGolden(t, e) })
	}
}

func testSchemaGolden(t *testing.T, e schemaEngine) {
	ms := e.d.migrations
	latest := ms[len(ms)-1].version
	var want goldenSchema
	if !golden.Update() {
		want = readGolden(t, e.d)
	}
	got := goldenSchema{}
	for _, m := range ms {
		v := m.version
		raw, open := e.fresh(t)
		migrateTo(t, raw, e.d, v)
		got[v] = schemaDump(t, raw, e.d, true)
		if !golden.Update() && got[v] != want[v] {
			t.Errorf("schema at version %d differs from %s:\n%s", v, goldenPath(e.d), lineDiff(want[v], got[v]))
		}
		if v == latest {
			continue
		}
		db, err := open()
		if err != nil {
			t.Fatalf("opening a store at version %d: %v", v, err)
		}
		db.Close()
		if dump := schemaDump(t, raw, e.d, true); !golden.Update() && dump != want[latest] {
			t.Errorf("a store at version %d, migrated, differs from version %d in %s:\n%s", v, latest, goldenPath(e.d), lineDiff(want[latest], dump))
		}
	}
	if golden.Update() {
		writeGolden(t, e.d, got)
		return
	}
	if e.d.advisory {
		return
	}
	// The version-4 file of the old store migrates to the same schema.
	path := copyV4(t)
	db, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	raw, err := openPool(path, "rw", time.Second, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if dump, want := schemaDump(t, raw, e.d, false), strings.Split(want[latest], "## audit_head\n")[0]; dump != want {
		t.Errorf("testdata/v4.db, migrated, differs from version %d in %s:\n%s", latest, goldenPath(e.d), lineDiff(want, dump))
	}
}

// rawSQLite opens a writing pool on a new SQLite file, without the store:
// what a program of an earlier version left is built on it (migrateTo).
func rawSQLite(t testing.TB, path string) *sql.DB {
	t.Helper()
	w, err := openPool(path, "rwc", time.Second, "immediate", []string{"journal_mode(WAL)"})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// migrateTo brings w, a pool on an empty database of d's engine, to schema
// version v one migration at a time, as the programs of each version did.
func migrateTo(t testing.TB, w *sql.DB, d *dialect, v int64) {
	t.Helper()
	ctx := context.Background()
	if _, err := w.ExecContext(ctx, sqlCreateMigrations); err != nil {
		t.Fatal(err)
	}
	for _, m := range d.migrations[:v] {
		if err := (&DB{w: w, d: d}).applyMigration(ctx, m, m.version); err != nil {
			t.Fatal(err)
		}
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	count := func(s string) map[string]int {
		m := map[string]int{}
		for _, l := range strings.Split(s, "\n") {
			m[l]++
		}
		return m
	}
	w, g := count(want), count(got)
	var b strings.Builder
	for _, l := range strings.Split(want, "\n") {
		if g[l] < w[l] {
			fmt.Fprintf(&b, "- %q\n", l)
		}
	}
	for _, l := range strings.Split(got, "\n") {
		if w[l] < g[l] {
			fmt.Fprintf(&b, "+ %q\n", l)
		}
	}
	return b.String()
}

// TestLiveTotalsMigration: migration 10 sums what a store of version 9
// holds per context (the oldest live seq after the evicted prefix, the
// live bytes, the next seq), so eviction after the upgrade goes on where
// it left off.
func TestLiveTotalsMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v9.db")
	raw := rawSQLite(t, path)
	migrateTo(t, raw, sqliteDialect, 9)
	for _, r := range []struct {
		ctx            string
		seq, bytes, ev int64
	}{{"c1", 1, 10, 1}, {"c1", 2, 20, 1}, {"c1", 3, 30, 0}, {"c1", 4, 40, 0}, {"c2", 1, 5, 1}} {
		if _, err := raw.Exec(insertLabels.text[1], r.ctx, r.seq, "s", "k", IntegrityUntrusted, "", "00", r.bytes, []byte{}, r.ev, formatTime(time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC))); err != nil {
			t.Fatal(err)
		}
	}
	raw.Close()
	db := openAt(t, path, nil)
	for id, want := range map[string][3]int64{"c1": {5, 70, 3}, "c2": {2, 0, 2}} {
		var got [3]int64
		if err := db.r.QueryRow(sqlGetLive, id).Scan(&got[0], &got[1], &got[2]); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: next, live bytes, oldest live = %v, want %v", id, got, want)
		}
	}
}
