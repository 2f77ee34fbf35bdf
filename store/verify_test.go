package store_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/store"
)

// chainTemplate builds a closed store holding records 1..10 and returns its
// path; each tamper case works on a copy.
func chainTemplate(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "template.db")
	db, err := store.Open(path, nil)
	writeTemplate(t, db, err)
	return path
}

// Raw SQL an attacker with write access to the file could run, on the
// compact rows of migration 6 (rowcodec.go). BLOB('text') and HEX('ff')
// stand for a byte string in each dialect (see dialectSQL); pg, when set,
// replaces sql on PostgreSQL.
var tamperSQL = []struct {
	name     string
	sql, pg  string
	firstBad int64
	problem  string
}{
	{name: "edit an interned string", sql: `UPDATE audit_strings SET value = BLOB('nothing to see') WHERE value = BLOB('call 4')`, firstBad: 4, problem: "edited"},
	{name: "re-point a record's strings", sql: `UPDATE audit_records SET fields = (SELECT fields FROM audit_records WHERE seq = 5) WHERE seq = 4`, firstBad: 4, problem: "edited"},
	{name: "edit args", sql: `UPDATE audit_records SET args = BLOB('{"path":"/etc/shadow"}') WHERE seq = 7`, firstBad: 7, problem: "edited"},
	{name: "edit extra", sql: `UPDATE audit_records SET extra = BLOB('{}') WHERE seq = 8`, firstBad: 8, problem: "edited"},
	{name: "edit time", sql: `UPDATE audit_records SET at = 1577836800000000 WHERE seq = 2`, firstBad: 2, problem: "edited"},
	{name: "flip truncated", sql: `UPDATE audit_records SET fields = substr(fields, 1, length(fields) - 1) || HEX('01') WHERE seq = 9`,
		pg: `UPDATE audit_records SET fields = overlay(fields placing '\x01'::bytea from length(fields)) WHERE seq = 9`, firstBad: 9, problem: "edited"},
	{name: "edit hash", sql: `UPDATE audit_records SET hash = prev_hash WHERE seq = 6`, firstBad: 6, problem: "edited"},
	{name: "corrupt the fields", sql: `UPDATE audit_records SET fields = HEX('ff') WHERE seq = 3`, firstBad: 3, problem: "unreadable"},
	{name: "delete an interned string", sql: `DELETE FROM audit_strings WHERE value = BLOB('call 3')`, firstBad: 3, problem: "unreadable"},
	{name: "delete middle", sql: `DELETE FROM audit_records WHERE seq = 5`, firstBad: 5, problem: "missing"},
	{name: "delete first", sql: `DELETE FROM audit_records WHERE seq = 1`, firstBad: 1, problem: "missing"},
	{name: "delete last", sql: `DELETE FROM audit_records WHERE seq = 10`, firstBad: 10, problem: "deleted from the end"},
	{name: "delete last two, fix head seq", sql: `DELETE FROM audit_records WHERE seq >= 9; UPDATE audit_head SET last_seq = 8`, firstBad: 8, problem: "head hash"},
	{name: "delete middle and renumber", sql: `DELETE FROM audit_records WHERE seq = 5;
		UPDATE audit_records SET seq = seq + 100 WHERE seq > 5; UPDATE audit_records SET seq = seq - 101 WHERE seq > 100;
		UPDATE audit_head SET last_seq = 9`, firstBad: 5, problem: "prev_hash"},
	{name: "insert at end", sql: `INSERT INTO audit_records SELECT 11, at, fields, args, extra, prev_hash, hash
		FROM audit_records WHERE seq = 3`, firstBad: 11, problem: "prev_hash"},
	{name: "insert in middle", sql: `UPDATE audit_records SET seq = seq + 100 WHERE seq >= 5; UPDATE audit_records SET seq = seq - 99 WHERE seq > 100;
		INSERT INTO audit_records SELECT 5, at, fields, BLOB('{"forged":true}'), extra, prev_hash, hash
		FROM audit_records WHERE seq = 2;
		UPDATE audit_head SET last_seq = 11`, firstBad: 5, problem: "prev_hash"},
	{name: "insert with negative seq", sql: `INSERT INTO audit_records SELECT -1, at, fields, args, extra, prev_hash, hash
		FROM audit_records WHERE seq = 1`, firstBad: -1, problem: "out of order"},
	{name: "swap two records keeping seqs", sql: `UPDATE audit_records SET seq = -3 WHERE seq = 3;
		UPDATE audit_records SET seq = 3 WHERE seq = 4; UPDATE audit_records SET seq = 4 WHERE seq = -3`, firstBad: 3, problem: "prev_hash"},
	{name: "swap contents of last two", sql: `UPDATE audit_records SET seq = -9 WHERE seq = 9;
		UPDATE audit_records SET seq = 9 WHERE seq = 10; UPDATE audit_records SET seq = 10 WHERE seq = -9`, firstBad: 9, problem: "prev_hash"},
	{name: "head hash edited", sql: `UPDATE audit_head SET last_hash = '` + strings.Repeat("f", 64) + `'`, firstBad: 10, problem: "head hash"},
	{name: "head deleted", sql: `DELETE FROM audit_head`, firstBad: 11, problem: "head unreadable or missing"},
	{name: "everything deleted", sql: `DELETE FROM audit_records`, firstBad: 1, problem: "deleted from the end"},
}

var (
	blobLit = regexp.MustCompile(`BLOB\('([^']*)'\)`)
	hexLit  = regexp.MustCompile(`HEX\('([0-9a-f]*)'\)`)
)

// dialectSQL spells the BLOB('text') and HEX('ff') of tamperSQL in one
// dialect.
func dialectSQL(sql string, postgres bool) string {
	if postgres {
		sql = blobLit.ReplaceAllString(sql, `convert_to('$1', 'UTF8')`)
		return hexLit.ReplaceAllString(sql, `'\x$1'::bytea`)
	}
	sql = blobLit.ReplaceAllString(sql, `CAST('$1' AS BLOB)`)
	return hexLit.ReplaceAllString(sql, `X'$1'`)
}

// stmt is one statement with its arguments ($1, $2, ...: both dialects).
type stmt struct {
	sql  string
	args []any
}

func TestVerifyDetectsTampering(t *testing.T) {
	tmpl := chainTemplate(t)
	apply := map[string]func(t *testing.T, path, sql string){
		"go": func(t *testing.T, path, sql string) {
			raw := store.RawOpen(t, path)
			if _, err := raw.Exec(sql); err != nil {
				t.Fatalf("tamper: %v", err)
			}
			raw.Close()
		},
		"sqlite3": func(t *testing.T, path, sql string) {
			if out, err := exec.Command(sqlite3CLI(t), path, sql).CombinedOutput(); err != nil {
				t.Fatalf("sqlite3: %v\n%s", err, out)
			}
		},
	}
	for tool, applyFn := range apply {
		for _, tt := range tamperSQL {
			t.Run(tool+"/"+tt.name, func(t *testing.T) {
				path := copyStore(t, tmpl)
				db := openRO(t, path)
				mustVerify(t, db, 10) // intact before
				applyFn(t, path, dialectSQL(tt.sql, false))
				res, err := db.Verify(context.Background())
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if res.OK || res.FirstBad != tt.firstBad || !strings.Contains(res.Problem, tt.problem) {
					t.Fatalf("Verify = %+v\nwant FirstBad %d, problem mentioning %q", res, tt.firstBad, tt.problem)
				}
			})
		}
	}
}

// forgeries are attackers who know the hash function and recompute
// hashes, but stop short of rewriting everything after their edit. Each
// returns the SQL to run given the intact records 1..10; the statements
// are plain SQL both backends accept.
var forgeries = []struct {
	name     string
	forge    func(recs []audit.Record) []stmt
	firstBad int64
	problem  string
}{
	{"edit and rehash one record", func(recs []audit.Record) []stmt {
		r := recs[3] // seq 4
		r.Args = json.RawMessage(`{"forged":true}`)
		return []stmt{update(r.Seq, string(r.Args), r.ComputeHash())}
	}, 5, "prev_hash"},
	{"edit and rehash the last record", func(recs []audit.Record) []stmt {
		r := recs[9]
		r.Args = json.RawMessage(`{}`)
		return []stmt{update(r.Seq, string(r.Args), r.ComputeHash())}
	}, 10, "head hash"},
	{"append a well-formed record without the store", func(recs []audit.Record) []stmt {
		r := recs[9]
		r.Seq, r.PrevHash, r.Args = 11, r.Hash, json.RawMessage(`{"slipped":"in"}`)
		r.Hash = r.ComputeHash()
		return []stmt{{`INSERT INTO audit_records SELECT 11, at, fields, $1, extra, $2, $3
				FROM audit_records WHERE seq = 10`, []any{[]byte(r.Args), unhex(r.PrevHash), unhex(r.Hash)}}}
	}, 11, "past the chain head"},
	{"rewrite a middle stretch", func(recs []audit.Record) []stmt {
		var stmts []stmt
		prev := recs[2].Hash
		for i := 3; i < 6; i++ { // seqs 4..6 rewritten, 7 left alone
			r := recs[i]
			r.PrevHash, r.Args = prev, json.RawMessage(`"forged"`)
			r.Hash = r.ComputeHash()
			stmts = append(stmts, stmt{`UPDATE audit_records SET args = $1, prev_hash = $2, hash = $3 WHERE seq = $4`,
				[]any{[]byte(r.Args), unhex(r.PrevHash), unhex(r.Hash), r.Seq}})
			prev = r.Hash
		}
		return stmts
	}, 7, "prev_hash"},
}

func TestVerifyDetectsForgery(t *testing.T) {
	tmpl := chainTemplate(t)
	ctx := context.Background()
	for _, tt := range forgeries {
		t.Run(tt.name, func(t *testing.T) {
			path := copyStore(t, tmpl)
			db := openPath(t, path)
			recs, err := db.Tail(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			raw := store.RawOpen(t, path)
			for _, s := range tt.forge(recs) {
				if _, err := raw.Exec(s.sql, s.args...); err != nil {
					t.Fatal(err)
				}
			}
			res, err := db.Verify(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK || res.FirstBad != tt.firstBad || !strings.Contains(res.Problem, tt.problem) {
				t.Fatalf("Verify = %+v, want FirstBad %d, problem mentioning %q", res, tt.firstBad, tt.problem)
			}
		})
	}
}

// TestVerifyLimitFullRewrite pins down the documented limit: an attacker
// who rewrites every record from some point on AND the head row goes
// undetected, because the chain holds no secret and no external anchor. If
// this test starts failing, the package doc's Limits section is out of date.
func TestVerifyLimitFullRewrite(t *testing.T) {
	db, path := openTemp(t, nil)
	recs := appendTail(t, db, 10)
	raw := store.RawOpen(t, path)
	prev := recs[5].Hash
	for i := 6; i < 10; i++ {
		r := recs[i]
		r.PrevHash, r.Args = prev, json.RawMessage(`"rewritten"`)
		r.Hash = r.ComputeHash()
		if _, err := raw.Exec(`UPDATE audit_records SET args = $1, prev_hash = $2, hash = $3 WHERE seq = $4`,
			[]byte(r.Args), unhex(r.PrevHash), unhex(r.Hash), r.Seq); err != nil {
			t.Fatal(err)
		}
		prev = r.Hash
	}
	if _, err := raw.Exec(`UPDATE audit_head SET last_hash = '` + prev + `'`); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, db, 10) // not detected: see the package doc
	// An external copy of the head taken before the rewrite does catch it.
	if prev == recs[9].Hash {
		t.Fatal("rewrite did not change the head hash")
	}
}

func TestVerifyWhileAppending(t *testing.T) {
	db, _ := openTemp(t, nil)
	appendN(t, db, 0, 20)
	verifyWhile(t, db, 220, func() { appendConcurrently(t, db, 200, 8) })
}

// update sets a record's args and hash, as a forger who recomputed it.
func update(seq int64, args, hash string) stmt {
	return stmt{`UPDATE audit_records SET args = $1, hash = $2 WHERE seq = $3`, []any{[]byte(args), unhex(hash), seq}}
}

// unhex is a hex hash as stored: its 32 bytes.
func unhex(h string) []byte {
	b, err := hex.DecodeString(h)
	if err != nil {
		panic(err)
	}
	return b
}
