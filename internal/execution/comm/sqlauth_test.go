package comm

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"modernc.org/sqlite"
)

// TestQueryAuthorizer (issue 26 item 10): SQLite's authorizer refuses
// what a read-only statement could still use to look outside the data —
// the database's host path (pragma_database_list), its raw pages
// (sqlite_dbpage, dbstat), other pragmas, ATTACH, load_extension — in any
// spelling and through a view of a hostile database file, with a typed
// error (ErrQueryRefused) whose agent-visible text holds no host path.
// Each case runs through Query (the lexical check first) and through run
// (the connection alone), so the authorizer is proven on its own. The
// schema stays readable.
func TestQueryAuthorizer(t *testing.T) {
	path := testDB(t)
	hostile, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	// A database file whose own views read what the agent may not: what
	// runs is judged, not what the query names.
	for _, s := range []string{
		`CREATE VIEW where_am_i AS SELECT file FROM pragma_database_list`,
		`CREATE VIEW pages AS SELECT data FROM sqlite_dbpage`,
	} {
		if _, err := hostile.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	hostile.Close()
	dir := filepath.Dir(path)
	q := openQuerier(t, path, 0, 0)
	refused := []struct {
		sql     string
		lexical error // what Query's lexical check answers first; nil: it lets the query through
	}{
		{"SELECT * FROM pragma_database_list", nil},
		{"SELECT file FROM pragma_database_list()", nil},
		{`SELECT file FROM "pragma_database_list"`, nil},
		{"SELECT file FROM [PRAGMA_DATABASE_LIST]", nil},
		{"SELECT file FROM main.pragma_database_list", nil},
		{"WITH x AS (SELECT file FROM pragma_database_list) SELECT * FROM x", nil},
		{"SELECT (SELECT file FROM pragma_database_list) AS f", nil},
		{"PRAGMA database_list", ErrNotReadOnly},
		{"SELECT * FROM sqlite_dbpage", nil},
		{"SELECT data FROM sqlite_dbpage WHERE pgno = 1", nil},
		{"SELECT * FROM dbstat", nil},
		{"SELECT * FROM pragma_compile_options", nil},
		{"SELECT * FROM pragma_function_list", nil},
		{"SELECT * FROM pragma_journal_mode", nil},
		{"ATTACH DATABASE '" + filepath.Join(dir, "x.db") + "' AS x", ErrNotReadOnly},
		{"SELECT load_extension('/tmp/evil.so')", ErrNotReadOnly},
		{`SELECT "load_extension"('/tmp/evil.so')`, ErrNotReadOnly},
	}
	ctx := context.Background()
	for _, tt := range refused {
		t.Run(tt.sql, func(t *testing.T) {
			_, err := q.run(ctx, tt.sql)
			wantKind(t, err, ErrQueryRefused)
			if c := Code(err); c != "POLICY_DENIED" {
				t.Errorf("code %s, want POLICY_DENIED", c)
			}
			_, qerr := q.Query(ctx, tt.sql)
			if tt.lexical != nil {
				wantKind(t, qerr, tt.lexical)
			} else {
				wantKind(t, qerr, ErrQueryRefused)
			}
			for _, e := range []error{err, qerr} {
				if pub := Violation(e).Public(); strings.Contains(pub, dir) || strings.Contains(pub, "data.db") {
					t.Errorf("agent-visible text names the host path: %q", pub)
				}
			}
		})
	}
	// The hostile file's views are refused before the authorizer looks:
	// trusted_schema(0) forbids virtual tables inside the schema's views.
	for _, view := range []string{"SELECT * FROM where_am_i", "SELECT * FROM pages"} {
		tab, err := q.Query(ctx, view)
		if err == nil || !strings.Contains(err.Error(), "unsafe use of virtual table") {
			t.Errorf("%q: %+v, %v; want refused", view, tab, err)
		}
	}
	for _, ok := range []string{
		"SELECT name, sql FROM sqlite_master",
		"SELECT count(*) FROM sqlite_schema WHERE type = 'table'",
		"SELECT name, type FROM pragma_table_info('t')",
		"SELECT * FROM pragma_index_list('t')",
		"SELECT value FROM json_each('[1,2,3]')",
		"SELECT name FROM v",
	} {
		tab, err := q.Query(ctx, ok)
		if err != nil {
			t.Errorf("%q: %v", ok, err)
			continue
		}
		if strings.Contains(tab.Text(), dir) {
			t.Errorf("%q: the answer names the host path", ok)
		}
	}
}

// TestQueryAuthorizerTable: the decision for each action SQLite presents,
// as a table; anything not listed (writes, schema changes, transactions)
// is refused.
func TestQueryAuthorizerTable(t *testing.T) {
	tests := []struct {
		action     int32
		arg1, arg2 string
		ok         bool
	}{
		{21, "", "", true},                          // SQLITE_SELECT
		{33, "", "", true},                          // SQLITE_RECURSIVE
		{20, "t", "a", true},                        // SQLITE_READ of a table
		{20, "sqlite_master", "sql", true},          // the schema
		{20, "pragma_table_info", "name", true},     // a schema pragma
		{20, "pragma_database_list", "file", false}, // the host path
		{20, "Pragma_Database_List", "file", false},
		{20, "sqlite_dbpage", "data", false},
		{20, "DBSTAT", "name", false},
		{19, "table_info", "t", true},     // SQLITE_PRAGMA, schema
		{19, "database_list", "", false},  // SQLITE_PRAGMA
		{19, "query_only", "0", false},    // SQLITE_PRAGMA, a setter
		{31, "", "upper", true},           // SQLITE_FUNCTION
		{31, "", "LOAD_EXTENSION", false}, // SQLITE_FUNCTION
		{31, "", "fts3_tokenizer", false}, // SQLITE_FUNCTION
		{24, "/tmp/x.db", "", false},      // SQLITE_ATTACH
		{25, "main", "", false},           // SQLITE_DETACH
		{18, "t", "", false},              // SQLITE_INSERT
		{23, "t", "a", false},             // SQLITE_UPDATE
		{22, "BEGIN", "", false},          // SQLITE_TRANSACTION
		{2, "u", "", false},               // SQLITE_CREATE_TABLE
		{29, "x", "fts5", false},          // SQLITE_CREATE_VTABLE
		{99, "", "", false},               // an action SQLite may add later
	}
	for _, tt := range tests {
		ok, what := queryAuthorizer(sqliteAction(tt.action), tt.arg1, tt.arg2, "main", "")
		if ok != tt.ok || (!ok && what == "") {
			t.Errorf("action %d (%q, %q): ok %v %q, want %v", tt.action, tt.arg1, tt.arg2, ok, what, tt.ok)
		}
	}
}

func sqliteAction(a int32) sqlite.AuthorizerActionCode { return sqlite.AuthorizerActionCode(a) }
