package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	statedir "github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/store/pgtest"
)

// Scale-out (issue 14): several Airlock instances, each with its own state
// directory (witness, kill switch file) as on separate machines, on one
// PostgreSQL database. What one instance or an operator beside it decides,
// every instance honours.

// pgFixtures starts n instances with stdio role role on one new database.
// AIRLOCK_STORE is set for the test, so the operator commands (the CLI's
// runner.OpenOperator, kill) reach the same database, as an operator's
// shell with the variable set would.
func pgFixtures(t *testing.T, n int, role string) []*fixture {
	t.Helper()
	dsn := pgtest.DSN(t)
	t.Setenv(statedir.StoreEnv, dsn)
	var fs []*fixture
	for range n {
		fs = append(fs, newFixtureConfig(t, fmt.Sprintf(testConfig, role)+"store: "+dsn+"\n"))
	}
	return fs
}

// TestScaleOutApprovalAcrossInstances: a need declared on instance A,
// approved by an operator at instance B's machine, is collected on
// instance C, exactly once; the shared chain verifies and names all three.
func TestScaleOutApprovalAcrossInstances(t *testing.T) {
	o := newOrigin(t)
	fs := pgFixtures(t, 3, "fetcher")
	a, c := fs[0].connect(t), fs[2].connect(t)
	res := call(t, a, "declare_need", need(o.URL+"/gated/report"))
	if res.IsError || !strings.Contains(text(res), "airlock approvals approve") {
		t.Fatalf("pending: %s", text(res))
	}
	id := structured(t, res)["declaration_id"].(string)
	if list := fs[1].approvals(t, false); len(list) != 1 || list[0].ID != id {
		t.Fatalf("instance B's operator sees %+v, want the declaration made on A", list)
	}
	fs[1].operatorApprove(t, id)
	got := collect(t, c, id)
	if got.IsError || !strings.Contains(text(got), "content of /gated/report") {
		t.Fatalf("collect on C after approval on B: %s", text(got))
	}
	if replay := collect(t, a, id); code(replay) != "APPROVAL_REQUIRED" {
		t.Fatalf("replay on A: %s", text(replay))
	}
	if o.hits.Load() != 1 {
		t.Fatalf("origin hits %d, want 1", o.hits.Load())
	}
	verifyShared(t, fs)
}

// verifyShared checks the one chain from every instance's state directory
// (each against its own witness) and that more than one instance wrote it.
func verifyShared(t *testing.T, fs []*fixture) {
	t.Helper()
	instances := map[string]bool{}
	for i, f := range fs {
		op, err := operator.Open(f.state, true)
		must(t, err)
		v, err := op.Verify(context.Background())
		must(t, err)
		if !v.OK {
			t.Fatalf("instance %d: chain does not verify: %+v", i, v)
		}
		must(t, op.Scan(context.Background(), 0, func(r *audit.Record) error {
			instances[r.Instance] = true
			return nil
		}))
		op.Close()
	}
	if len(instances) < 2 || instances[""] {
		t.Fatalf("records name instances %v; want several, none empty", instances)
	}
}

// TestScaleOutLimitShared: max_actions (2 for role limited) counts calls
// on every instance of one context together.
func TestScaleOutLimitShared(t *testing.T) {
	fs := pgFixtures(t, 2, "limited")
	a, b := fs[0].connect(t), fs[1].connect(t)
	read := map[string]any{"pool": "alpha", "path": "hello.txt"}
	if res := call(t, a, "read_pool_file", read); res.IsError {
		t.Fatalf("first call on A: %s", text(res))
	}
	if res := call(t, b, "read_pool_file", read); res.IsError {
		t.Fatalf("second call on B: %s", text(res))
	}
	if res := call(t, a, "read_pool_file", read); code(res) != "LIMIT_EXCEEDED" {
		t.Fatalf("third call (on A) = %q %s, want LIMIT_EXCEEDED", code(res), text(res))
	}
	if res := call(t, b, "read_pool_file", read); code(res) != "LIMIT_EXCEEDED" {
		t.Fatalf("fourth call (on B) = %q %s, want LIMIT_EXCEEDED", code(res), text(res))
	}
}

// TestScaleOutKillSwitch: `airlock kill` run at instance A's machine (the
// kill switch file there, then the database row) refuses calls on
// instance B within 50 ms of the row's commit, and the release frees
// both.
func TestScaleOutKillSwitch(t *testing.T) {
	fs := pgFixtures(t, 2, "local")
	a, b := fs[0].connect(t), fs[1].connect(t)
	read := map[string]any{"pool": "alpha", "path": "hello.txt"}
	if res := call(t, b, "read_pool_file", read); res.IsError {
		t.Fatalf("before: %s", text(res))
	}
	ctx := context.Background()
	st, err := operator.TripKillSwitch(fs[0].state, "tester", "incident")
	must(t, err)
	if res := callUntil(t, a, "read_pool_file", read, func(res *mcp.CallToolResult) bool { return code(res) == "KILL_SWITCH_ENGAGED" }); code(res) != "KILL_SWITCH_ENGAGED" {
		t.Fatalf("A right after the trip: %q %s", code(res), text(res))
	}
	// From when the row's commit is known to be done (RecordKillChange has
	// returned). Measured from before the call instead, the first refused
	// call started 19–42 ms in under load, right after it returned: B had
	// already seen the NOTIFY by then.
	_, err = operator.RecordKillChange(ctx, fs[0].state, st)
	must(t, err)
	recorded := time.Now()
	// Issue 11's bound: every call on B that starts more than 50 ms after
	// the trip is refused. A call's own duration (its audit commit on a
	// loaded machine) does not count against the bound: what is measured
	// is when B's in-memory switch changed, seen from the calls' starts.
	for {
		start := time.Now()
		res := call(t, b, "read_pool_file", read)
		if code(res) == "KILL_SWITCH_ENGAGED" {
			t.Logf("B's first refused call started %v after the trip was recorded", start.Sub(recorded))
			break
		}
		if d := start.Sub(recorded); d > 50*time.Millisecond {
			t.Fatalf("B served a call that started %v after the trip was recorded, want refused from 50ms on: %s", d, text(res))
		}
	}
	// `airlock kill --release` beside instance B: audited first, then the
	// row and B's file; A's file still says engaged, so A stays stopped
	// until the release reaches its machine too (the file is per machine).
	op, err := operator.Open(fs[1].state, false)
	must(t, err)
	must(t, op.SetKillSwitch(ctx, false, "tester", "over"))
	op.Close()
	deadline := time.Now().Add(2 * time.Second)
	for {
		res := call(t, b, "read_pool_file", read)
		if !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B still refuses after the release: %s", text(res))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if res := call(t, a, "read_pool_file", read); code(res) != "KILL_SWITCH_ENGAGED" {
		t.Fatalf("A, whose own file is still engaged: %q %s", code(res), text(res))
	}
	op, err = operator.Open(fs[0].state, false)
	must(t, err)
	must(t, op.SetKillSwitch(ctx, false, "tester", "over here too"))
	op.Close()
	if res := callUntil(t, a, "read_pool_file", read, func(res *mcp.CallToolResult) bool { return !res.IsError }); res.IsError {
		t.Fatalf("A after its own release: %s", text(res))
	}
	verifyShared(t, fs)
}

// TestScaleOutCollectOnce: an approved declaration collected from two
// instances at the same moment runs once: one client gets the content,
// the other a refusal, and the origin sees one request.
func TestScaleOutCollectOnce(t *testing.T) {
	o := newOrigin(t)
	fs := pgFixtures(t, 2, "fetcher")
	a, b := fs[0].connect(t), fs[1].connect(t)
	// Four rounds: comm.fetch allows 4 per minute per context, counted
	// across both instances.
	for round := range 4 {
		res := call(t, a, "declare_need", need(fmt.Sprintf("%s/gated/r%d", o.URL, round)))
		id := structured(t, res)["declaration_id"].(string)
		fs[1].operatorApprove(t, id)
		before := o.hits.Load()
		var wg sync.WaitGroup
		codes := make([]string, 2)
		for i, conn := range []*client.Client{a, b} {
			wg.Go(func() {
				r := collect(t, conn, id)
				codes[i] = code(r)
				if !r.IsError {
					codes[i] = "OK"
				}
			})
		}
		wg.Wait()
		// The loser read the declaration either after the winner's
		// execution (executed: APPROVAL_REQUIRED) or during it
		// (executing: PRECONDITION_FAILED); never a second run.
		slices.Sort(codes)
		if got := strings.Join(codes, ","); got != "APPROVAL_REQUIRED,OK" && got != "OK,PRECONDITION_FAILED" {
			t.Fatalf("round %d: outcomes %s, want one OK and one refusal", round, got)
		}
		if n := o.hits.Load() - before; n != 1 {
			t.Fatalf("round %d: origin hit %d times, want once", round, n)
		}
	}
}
