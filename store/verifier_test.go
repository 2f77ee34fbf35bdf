package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestVerifyParallelMatchesSerial: however Verify reads the rows — as
// recordColumns in one chunk (PostgreSQL's way), packed in one chunk, or
// packed in two chunks read at once — it gives the same verdict, for an
// intact chain and for edits, deletions, insertions and swaps anywhere,
// the seam between the chunks included.
func TestVerifyParallelMatchesSerial(t *testing.T) {
	const n = 3000
	mid := int64(n / 2) // the seam when split in two
	ctx := context.Background()
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "tmpl.db")
	db := openAt(t, tmpl, nil)
	fillDemo(t, db, n)
	db.Close()

	m := itoa(mid)
	cases := []struct{ name, sql string }{
		{"intact", ``},
		{"edit args at 7", `UPDATE audit_records SET args = CAST('{}' AS BLOB) WHERE seq = 7`},
		{"edit args at the seam", `UPDATE audit_records SET args = CAST('{}' AS BLOB) WHERE seq = ` + m},
		{"edit args after the seam", `UPDATE audit_records SET args = CAST('{}' AS BLOB) WHERE seq = ` + m + ` + 1`},
		{"edit the last", `UPDATE audit_records SET args = CAST('{}' AS BLOB) WHERE seq = ` + itoa(n)},
		{"delete at the seam", `DELETE FROM audit_records WHERE seq = ` + m},
		{"delete after the seam", `DELETE FROM audit_records WHERE seq = ` + m + ` + 1`},
		{"delete the seam and after", `DELETE FROM audit_records WHERE seq IN (` + m + `, ` + m + ` + 1)`},
		{"delete the second half", `DELETE FROM audit_records WHERE seq > ` + m},
		{"swap across the seam", `UPDATE audit_records SET seq = -1 WHERE seq = ` + m + `;
			UPDATE audit_records SET seq = ` + m + ` WHERE seq = ` + m + ` + 1;
			UPDATE audit_records SET seq = ` + m + ` + 1 WHERE seq = -1`},
		{"hash edited at the seam", `UPDATE audit_records SET hash = prev_hash WHERE seq = ` + m},
		{"hash truncated at the seam", `UPDATE audit_records SET hash = X'ff' WHERE seq = ` + m},
		{"fields corrupt after the seam", `UPDATE audit_records SET fields = X'ff' WHERE seq = ` + m + ` + 1`},
		{"stray negative seq", `INSERT INTO audit_records SELECT -5, at, fields, args, extra, prev_hash, hash FROM audit_records WHERE seq = 9`},
		{"appended past the head", `INSERT INTO audit_records SELECT ` + itoa(n+1) + `, at, fields, args, extra, hash, hash FROM audit_records WHERE seq = ` + itoa(n)},
		{"edits in both halves", `UPDATE audit_records SET args = CAST('{}' AS BLOB) WHERE seq IN (` + itoa(n-5) + `, 20)`},
		{"string deleted", `DELETE FROM audit_strings WHERE id = (SELECT max(id) FROM audit_strings)`},
	}
	defer func(v int64) { splitMin = v }(splitMin)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("c%d.db", i))
			b, err := os.ReadFile(tmpl)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.sql != "" {
				v4Tamper(t, path, tc.sql)
			}
			ro, err := OpenReadOnly(path)
			if err != nil {
				t.Fatal(err)
			}
			defer ro.Close()
			var results []VerifyResult
			for _, mode := range []struct {
				split  int64
				packed bool
			}{{1 << 62, false}, {1 << 62, true}, {100, true}} {
				splitMin = mode.split
				d := *sqliteDialect
				if !mode.packed {
					d.packed, d.verifyAll, d.verifyAfter = false, sqlVerifyAll, sqlVerifyAfter
				}
				ro.d = &d
				for _, after := range []int64{0, 10} {
					h, _, err := ro.HashAt(ctx, after)
					if err != nil {
						t.Fatal(err)
					}
					res, err := ro.VerifyFrom(ctx, after, h)
					if err != nil {
						t.Fatal(err)
					}
					results = append(results, res)
				}
			}
			for i := 2; i < len(results); i++ {
				if results[i] != results[i%2] {
					t.Fatalf("verdicts differ:\n%+v\n%+v", results[i%2], results[i])
				}
			}
			if tc.sql == "" && (!results[0].OK || results[0].Records != n) {
				t.Fatalf("intact chain: %+v", results[0])
			}
			if tc.sql != "" && results[0].OK {
				t.Fatalf("tampering not caught: %+v", results[0])
			}
			t.Logf("%+v", results[0])
		})
	}
}

func itoa(n int64) string { return fmt.Sprint(n) }
