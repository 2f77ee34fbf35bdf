package comm

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// testDB creates a small database in a fresh directory and returns its path.
func testDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{
		`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL, data BLOB)`,
		`INSERT INTO t VALUES (1, 'alice', 1.5, x'00ff'), (2, 'bob', NULL, 'text blob'), (3, 'tab	and
newline', -2, NULL)`,
		`CREATE VIEW v AS SELECT name FROM t`,
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// snapshot hashes every file in the database's directory, so a test sees a
// changed database, a new journal or a file created by ATTACH.
func snapshot(t *testing.T, dir string) map[string][32]byte {
	t.Helper()
	m := map[string][32]byte{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[e.Name()] = sha256.Sum256(b)
	}
	return m
}

// wantUnchanged fails the test unless dir holds exactly the files of
// before (a snapshot), each with the same contents.
func wantUnchanged(t *testing.T, dir string, before map[string][32]byte) {
	t.Helper()
	after := snapshot(t, dir)
	if len(after) != len(before) {
		t.Fatalf("files before %d, after %d", len(before), len(after))
	}
	for name, sum := range before {
		if after[name] != sum {
			t.Errorf("%s changed", name)
		}
	}
}

func openQuerier(t *testing.T, path string, maxRows int, timeout time.Duration) *Querier {
	t.Helper()
	q, err := OpenQuerier(path, maxRows, timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

func TestQuerySelect(t *testing.T) {
	q := openQuerier(t, testDB(t), 0, 0)
	tab, err := q.Query(context.Background(), "SELECT id, name, score, data FROM t ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"1", "alice", "1.5", "x'00ff'"}, {"2", "bob", "NULL", "text blob"}, {"3", "tab\tand\nnewline", "-2", "NULL"}}
	if !slices.Equal(tab.Columns, []string{"id", "name", "score", "data"}) || len(tab.Rows) != 3 || tab.Truncated {
		t.Fatalf("table = %+v", tab)
	}
	for i := range want {
		if !slices.Equal(tab.Rows[i], want[i]) {
			t.Errorf("row %d = %q, want %q", i, tab.Rows[i], want[i])
		}
	}
	wantText := "id\tname\tscore\tdata\n1\talice\t1.5\tx'00ff'\n2\tbob\tNULL\ttext blob\n3\ttab\\tand\\nnewline\t-2\tNULL\n"
	if got := tab.Text(); got != wantText {
		t.Errorf("Text() = %q, want %q", got, wantText)
	}
	for _, ok := range []string{
		"select count(*) from v",
		"WITH x AS (SELECT 1 AS a) SELECT a FROM x;",
		"VALUES (1, 'a');;",
		"/* lead */ SELECT ';' -- ; DROP TABLE t",
		"SELECT replace(name, 'a', 'b') FROM t",
		`SELECT "name" FROM t WHERE name = 'DELETE FROM t'`,
		"SELECT name FROM pragma_table_info('t')",
	} {
		if _, err := q.Query(context.Background(), ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
}

// TestQueryRefuses: writes, schema changes, ATTACH, pragmas, extensions and
// chained statements are refused, and no file in the directory changes.
func TestQueryRefuses(t *testing.T) {
	path := testDB(t)
	dir := filepath.Dir(path)
	before := snapshot(t, dir)
	q := openQuerier(t, path, 0, 0)
	tests := []struct {
		sql  string
		kind error
	}{
		{"INSERT INTO t(name) VALUES ('x')", ErrNotReadOnly},
		{"UPDATE t SET name = 'x'", ErrNotReadOnly},
		{"DELETE FROM t", ErrNotReadOnly},
		{"REPLACE INTO t(id) VALUES (1)", ErrNotReadOnly},
		{"CREATE TABLE u (a)", ErrNotReadOnly},
		{"DROP TABLE t", ErrNotReadOnly},
		{"ALTER TABLE t ADD COLUMN z", ErrNotReadOnly},
		{"ATTACH DATABASE 'evil.db' AS evil", ErrNotReadOnly},
		{"ATTACH 'file:evil.db?mode=rwc' AS evil", ErrNotReadOnly},
		{"DETACH main", ErrNotReadOnly},
		{"PRAGMA query_only = 0", ErrNotReadOnly},
		{"PRAGMA writable_schema = 1", ErrNotReadOnly},
		{"PRAGMA journal_mode = WAL", ErrNotReadOnly},
		{"VACUUM INTO 'copy.db'", ErrNotReadOnly},
		{"BEGIN IMMEDIATE", ErrNotReadOnly},
		{"WITH x AS (SELECT 1) INSERT INTO t(id) SELECT * FROM x", ErrNotReadOnly},
		{"WITH x AS (SELECT 1) DELETE FROM t", ErrNotReadOnly},
		{"SELECT load_extension('/tmp/evil.so')", ErrNotReadOnly},
		{`SELECT "load_extension"('/tmp/evil.so')`, ErrNotReadOnly},
		{"SELECT fts3_tokenizer('x')", ErrNotReadOnly},
		{"SELECT 1; DROP TABLE t", ErrMultipleStatements},
		{"SELECT 1; SELECT 2", ErrMultipleStatements},
		{"SELECT 1 /* ; */; -- x\n INSERT INTO t(id) VALUES (9)", ErrMultipleStatements},
		{"SELECT 1\x00; DROP TABLE t", ErrInvalidQuery},
		{"SELECT 'unterminated", ErrInvalidQuery},
		{`SELECT "unterminated`, ErrInvalidQuery},
		{"SELECT [unterminated", ErrInvalidQuery},
		{"EXPLAIN SELECT 1", ErrInvalidQuery},
		{"", ErrInvalidQuery},
		{" ; ", ErrInvalidQuery},
		{"SELECT * FROM missing_table", ErrInvalidQuery},
		{"SELEC 1", ErrInvalidQuery},
		{"SELECT " + strings.Repeat("1+", maxSQLBytes/2) + "1", ErrInvalidQuery},
	}
	for _, tt := range tests {
		t.Run(tt.sql[:min(len(tt.sql), 40)], func(t *testing.T) {
			_, err := q.Query(context.Background(), tt.sql)
			wantKind(t, err, tt.kind)
		})
	}
	wantUnchanged(t, dir, before)
}

// TestQueryConnectionIsReadOnly bypasses checkSQL: the connection itself
// refuses writes, ATTACH and huge values, and — with its authorizer taken
// away too — still refuses a write after the statement turns query_only
// off. Each layer holds alone.
func TestQueryConnectionIsReadOnly(t *testing.T) {
	path := testDB(t)
	dir := filepath.Dir(path)
	before := snapshot(t, dir)
	q := openQuerier(t, path, 0, 0)
	q.db.SetMaxOpenConns(1) // the PRAGMA below and the writes share a connection
	ctx := context.Background()
	for _, tt := range []struct {
		sql  string
		kind error
	}{
		{"INSERT INTO t(name) VALUES ('x')", ErrQueryRefused},
		{"DROP TABLE t", ErrQueryRefused},
		{"ATTACH 'file:" + filepath.Join(dir, "evil.db") + "?mode=rwc' AS evil", ErrQueryRefused},
		{"PRAGMA query_only = 0", ErrQueryRefused},
		{"SELECT zeroblob(100000000)", ErrInvalidQuery},
		{"SELECT load_extension('x')", ErrQueryRefused},
	} {
		_, err := q.run(ctx, tt.sql)
		wantKind(t, err, tt.kind)
	}
	// Without the authorizer: query_only can be turned off, mode=ro holds,
	// and SQLITE_LIMIT_ATTACHED still refuses ATTACH.
	conn, err := q.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Raw(func(dc any) error { return dc.(sqlite.AuthorizerRegisterer).RegisterAuthorizer(nil) }); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA query_only = 0"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "UPDATE t SET name = 'x'"); err == nil || !strings.Contains(err.Error(), "readonly") {
		t.Fatalf("UPDATE after query_only off, without the authorizer: %v, want SQLITE_READONLY", err)
	}
	if _, err := sqlite.Limit(conn, sqlite3.SQLITE_LIMIT_ATTACHED, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "ATTACH 'file:"+filepath.Join(dir, "evil.db")+"?mode=rwc' AS evil"); err == nil {
		t.Fatal("ATTACH with SQLITE_LIMIT_ATTACHED 0 succeeded")
	}
	conn.Close()
	wantUnchanged(t, dir, before)
}

// TestQueryTimeout: a query that never ends is interrupted (ErrTimeout is
// the verdict: nothing else can end it).
func TestQueryTimeout(t *testing.T) {
	q := openQuerier(t, testDB(t), 0, 200*time.Millisecond)
	_, err := q.Query(context.Background(), "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c")
	wantKind(t, err, ErrTimeout)
	// The connection is usable afterwards.
	if _, err := q.Query(context.Background(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
}

// TestQueryCaps: the row cap, including on an endless result set, and the
// cell bound.
func TestQueryCaps(t *testing.T) {
	q := openQuerier(t, testDB(t), 10, 5*time.Second)
	for _, s := range []string{
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 1000) SELECT x FROM c",
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c",
	} {
		tab, err := q.Query(context.Background(), s)
		if err != nil || len(tab.Rows) != 10 || !tab.Truncated || tab.Rows[9][0] != "10" {
			t.Errorf("%s: err %v, table %+v", s, err, tab)
		}
		if !strings.HasSuffix(tab.Text(), "(truncated: 10 rows shown)\n") {
			t.Errorf("Text() does not say truncated")
		}
	}
	tab, err := q.Query(context.Background(), "SELECT printf('%.*c', 10000, 'x'), randomblob(10000)")
	if err != nil || !tab.CellsTruncated || tab.Truncated {
		t.Fatalf("err %v, table %+v", err, tab)
	}
	for _, c := range tab.Rows[0] {
		if len(c) > maxCellBytes {
			t.Errorf("cell of %d bytes", len(c))
		}
	}
}

// TestQueryErrorsHidePath: an SQL error reaches the agent without the
// database's location.
func TestQueryErrorsHidePath(t *testing.T) {
	path := testDB(t)
	q := openQuerier(t, path, 0, 0)
	_, err := q.Query(context.Background(), "SELECT * FROM nope")
	wantKind(t, err, ErrInvalidQuery)
	pub := Violation(err).Public()
	if strings.Contains(pub, filepath.Dir(path)) || !strings.Contains(pub, "no such table") {
		t.Errorf("public message = %q", pub)
	}
}

func TestOpenQuerierRefuses(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "not.db")
	os.WriteFile(notDB, []byte(strings.Repeat("not a database ", 100)), 0o600)
	for _, p := range []string{filepath.Join(dir, "missing.db"), dir, notDB} {
		if q, err := OpenQuerier(p, 0, 0); err == nil {
			q.Close()
			t.Errorf("OpenQuerier(%q) succeeded", p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); err == nil {
		t.Error("a missing database was created")
	}
}
