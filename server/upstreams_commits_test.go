package server

import (
	"database/sql"
	"encoding/binary"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/airlock-dev/airlock/internal/execution/state"
)

// walCommit is one commit in SQLite's write-ahead log: the pages it wrote.
type walCommit map[uint32]bool

// walCommits reads the commits the write-ahead log of the store in
// stateDir holds since the log last started over, from the file itself: a
// frame whose header carries the database's size after it ends a commit;
// frames whose salts are not the header's are left over from before a
// restart. It also returns the log's salt, so that a caller can tell a
// restart between two reads. No hook in the store: whatever path writes,
// its commit is here.
func walCommits(t *testing.T, stateDir string) ([]walCommit, uint64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(stateDir, state.DBFile+"-wal"))
	must(t, err)
	if len(b) < 32 {
		return nil, 0
	}
	be := binary.BigEndian
	page := int(be.Uint32(b[8:12]))
	s1, s2 := be.Uint32(b[16:20]), be.Uint32(b[20:24])
	var out []walCommit
	cur := walCommit{}
	for off := 32; off+24+page <= len(b); off += 24 + page {
		h := b[off : off+24]
		if be.Uint32(h[8:12]) != s1 || be.Uint32(h[12:16]) != s2 {
			break
		}
		cur[be.Uint32(h[0:4])] = true
		if be.Uint32(h[4:8]) != 0 {
			out, cur = append(out, cur), walCommit{}
		}
	}
	return out, uint64(s1)<<32 | uint64(s2)
}

// tablePages are the root pages of table's b-trees (the table's and its
// indexes'), read through a read-only connection of the test's own.
func tablePages(t *testing.T, stateDir, table string) map[uint32]bool {
	t.Helper()
	u := url.URL{Scheme: "file", Path: filepath.Join(stateDir, state.DBFile), RawQuery: "mode=ro"}
	db, err := sql.Open("sqlite", u.String())
	must(t, err)
	defer db.Close()
	rows, err := db.Query(`SELECT rootpage FROM sqlite_master WHERE tbl_name = ? AND rootpage > 0`, table)
	must(t, err)
	defer rows.Close()
	out := map[uint32]bool{}
	for rows.Next() {
		var p uint32
		must(t, rows.Scan(&p))
		out[p] = true
	}
	must(t, rows.Err())
	return out
}

// TestAnsweredNeedCommits (issue 23): an answered, policy-approved
// comm.mcp need on a warm context commits two write transactions — before
// the upstream is called, the call's started record with the declaration,
// created executing (declared, approved by the policy, its approval
// consumed); after it, the declaration's end, the result's content label
// and the call's audit record together — where it committed six before:
// the started record, the declaration, Begin, Finish and the record each
// on their own, and the upstream's health row synced on the one writing
// connection between two calls. The health row is written off the call's
// path (and now without an fsync of its own), so its commits are told
// apart by the pages they write and not counted.
func TestAnsweredNeedCommits(t *testing.T) {
	f, u, c := echoAgent(t, "agent-token-commits-0123456789abcdef")
	// The first call opens the session and the upstream's.
	callOK(t, c, "declare_need", mcpNeed("echo", map[string]any{"message": "warm"}))
	health := tablePages(t, f.state, "upstream_health")
	if len(health) == 0 {
		t.Fatal("no upstream_health table in the store")
	}
	// A checkpoint that copied the whole log lets the next commit start it
	// over (new salts): a call measured across that is measured again.
	for i, measured := 0, 0; measured < 3; i++ {
		if i == 20 {
			t.Fatalf("the write-ahead log started over during %d of 20 calls", i-measured)
		}
		before, salt := walCommits(t, f.state)
		calls := u.calls.Load()
		callOK(t, c, "declare_need", mcpNeed("echo", map[string]any{"message": "again"}))
		after, salt2 := walCommits(t, f.state)
		if u.calls.Load() != calls+1 {
			t.Fatalf("call %d reached the upstream %d times, want once", i, u.calls.Load()-calls)
		}
		if salt != salt2 || len(after) < len(before) {
			continue
		}
		measured++
		n := 0
		for _, cm := range after[len(before):] {
			onlyHealth := true
			for p := range cm {
				onlyHealth = onlyHealth && health[p]
			}
			if !onlyHealth {
				n++
			}
		}
		if n != 2 {
			t.Errorf("call %d: %d write transactions, want 2 (started record + declaration executing; end + label + record)", i, n)
		}
	}
}
