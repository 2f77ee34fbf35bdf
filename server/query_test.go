package server

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestDeclareNeedQueryRefusals (issue 26 item 10): a comm.query that
// would read the database's host path (pragma_database_list), its raw
// pages (sqlite_dbpage), attach another file or load an extension is
// refused end to end with a typed code, audited with it, and neither the
// answer nor anything else the agent sees names where the database lives;
// the schema is readable.
func TestDeclareNeedQueryRefusals(t *testing.T) {
	dbDir := t.TempDir()
	dbPath := filepath.Join(dbDir, "shop-secret-location.db")
	db, err := sql.Open("sqlite", dbPath)
	must(t, err)
	_, err = db.Exec(`CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO items (name) VALUES ('lamp')`)
	must(t, err)
	db.Close()
	cfg := strings.Replace(fmt.Sprintf(testConfig, "fetcher"), "\ncomm:\n", "\ncomm:\n  databases: {shop: {path: "+dbPath+"}}\n", 1)
	f := newFixtureConfig(t, cfg)
	c := f.connect(t)
	query := func(sqlText string) map[string]any {
		return map[string]any{
			"operation":  "comm.query",
			"parameters": map[string]any{"query": sqlText, "source": "shop"},
			"justification": map[string]any{
				"user_request": "What is in the shop?", "missing_knowledge": "The shop's rows.", "expected_use": "List them.",
			},
		}
	}
	tests := []struct {
		sql, code string
	}{
		{"SELECT file FROM pragma_database_list", "POLICY_DENIED"},
		{`SELECT * FROM "pragma_database_list"`, "POLICY_DENIED"},
		{"SELECT data FROM sqlite_dbpage", "POLICY_DENIED"},
		{"SELECT * FROM pragma_compile_options", "POLICY_DENIED"},
		{"PRAGMA database_list", "WRITE_ATTEMPT"},
		{"ATTACH DATABASE '" + filepath.Join(dbDir, "other.db") + "' AS other", "WRITE_ATTEMPT"},
		{"SELECT load_extension('/tmp/evil.so')", "WRITE_ATTEMPT"},
		{"SELECT name FROM sqlite_master", ""},
		{"SELECT name FROM items", ""},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			res := call(t, c, "declare_need", query(tt.sql))
			if code(res) != tt.code {
				t.Fatalf("code %q, want %q: %s", code(res), tt.code, text(res))
			}
			seen := text(res) + fmt.Sprint(res.StructuredContent)
			if strings.Contains(seen, dbDir) || strings.Contains(seen, "shop-secret-location") {
				t.Fatalf("the agent sees the database's host path: %s", seen)
			}
			if tt.code == "" {
				return
			}
			recs := f.auditRecords(t)
			last := recs[len(recs)-1]
			if last.Tool != "declare_need" || last.Violation != tt.code {
				t.Fatalf("last record: tool %q violation %q, want declare_need %s", last.Tool, last.Violation, tt.code)
			}
		})
	}
}
