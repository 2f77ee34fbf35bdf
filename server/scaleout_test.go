package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"

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

// pgPair is two instances on one PostgreSQL database, each with a client
// connected.
func pgPair(t *testing.T, role string) (fs []*fixture, a, b *client.Client) {
	t.Helper()
	fs = pgFixtures(t, 2, role)
	return fs, fs[0].connect(t), fs[1].connect(t)
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
	_, a, b := pgPair(t, "limited")
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
// kill switch file there, then the database row) refuses A's next call,
// and instance B's next call once the row's commit returned; the release
// frees each at its next call (issue 26 item 7: no poll, no deadline).
func TestScaleOutKillSwitch(t *testing.T) {
	fs, a, b := pgPair(t, "local")
	read := map[string]any{"pool": "alpha", "path": "hello.txt"}
	if res := call(t, b, "read_pool_file", read); res.IsError {
		t.Fatalf("before: %s", text(res))
	}
	ctx := context.Background()
	st, err := operator.TripKillSwitch(fs[0].state, "tester", "incident")
	must(t, err)
	// Every call reads the switch itself (the file beside it, the shared
	// row): the next call after an order returned obeys it, no waiting.
	if res := call(t, a, "read_pool_file", read); code(res) != "KILL_SWITCH_ENGAGED" {
		t.Fatalf("A right after the trip: %q %s", code(res), text(res))
	}
	// Once the row's commit is done (RecordKillChange has returned), B's
	// next call is refused: B has no file of A's, only the shared row.
	_, err = operator.RecordKillChange(ctx, fs[0].state, st)
	must(t, err)
	if res := call(t, b, "read_pool_file", read); code(res) != "KILL_SWITCH_ENGAGED" {
		t.Fatalf("B after the trip was recorded: %q %s", code(res), text(res))
	}
	// `airlock kill --release` beside instance B: audited first, then the
	// row and B's file; A's file still says engaged, so A stays stopped
	// until the release reaches its machine too (the file is per machine).
	op, err := operator.Open(fs[1].state, false)
	must(t, err)
	must(t, op.SetKillSwitch(ctx, false, "tester", "over"))
	op.Close()
	if res := call(t, b, "read_pool_file", read); res.IsError {
		t.Fatalf("B after the release: %s", text(res))
	}
	if res := call(t, a, "read_pool_file", read); code(res) != "KILL_SWITCH_ENGAGED" {
		t.Fatalf("A, whose own file is still engaged: %q %s", code(res), text(res))
	}
	op, err = operator.Open(fs[0].state, false)
	must(t, err)
	must(t, op.SetKillSwitch(ctx, false, "tester", "over here too"))
	op.Close()
	if res := call(t, a, "read_pool_file", read); res.IsError {
		t.Fatalf("A after its own release: %s", text(res))
	}
	verifyShared(t, fs)
}

// TestScaleOutCollectOnce: an approved declaration collected from two
// instances at the same moment runs once: one client gets the content,
// the other a refusal, and the origin sees one request.
func TestScaleOutCollectOnce(t *testing.T) {
	o := newOrigin(t)
	fs, a, b := pgPair(t, "fetcher")
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
