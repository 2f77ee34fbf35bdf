package runner

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/internal/testkit/testpool"
	"github.com/airlock-dev/airlock/phasegate"
	"github.com/airlock-dev/airlock/store"
)

const cfgYAML = `
server: {max_output_bytes: 64}
pools:
  - {id: p, description: test pool, path: pool, trust: trusted}
policies:
  base: {allow: ["pool.*", "test.*"]}
roles:
  local: {policy: base, pools: [p]}
`

func newRunner(t testing.TB, opts *Options) (*Runner, string) {
	t.Helper()
	return newRunnerWith(t, cfgYAML, opts)
}

// newRunnerWith is newRunner on another configuration text.
func newRunnerWith(t testing.TB, yaml string, opts *Options) (*Runner, string) {
	t.Helper()
	dir := t.TempDir()
	// long.txt: 200 bytes, multi-byte runes
	testpool.Write(t, filepath.Join(dir, "pool"), map[string]string{"long.txt": strings.Repeat("é", 100)})
	cfg, err := config.Parse("test.yaml", []byte(yaml), dir)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	r, err := New(cfg, state, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, state
}

func openSession(t testing.TB, r *Runner) *Session {
	t.Helper()
	s, err := r.OpenSession(context.Background(), SessionParams{Principal: "tester", Role: "local", Transport: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// setPhase writes a context's phase straight into the store, as an
// operator (or a corrupted row, for phases Airlock does not know) would.
func setPhase(t testing.TB, r *Runner, s *Session, phase string) {
	t.Helper()
	if _, err := r.db.UpdateContext(context.Background(), s.ContextID(), func(c *contexts.Context) error {
		c.Phase = phase
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func lastRecord(t *testing.T, r *Runner) audit.Record {
	t.Helper()
	recs, err := r.db.Tail(context.Background(), 1)
	if err != nil || len(recs) != 1 {
		t.Fatalf("tail: %v %v", recs, err)
	}
	return recs[0]
}

// addTool registers an extra tool for a test (the runner's registry is
// otherwise fixed at New).
func addTool(t *testing.T, r *Runner, tool toolkit.Tool) {
	t.Helper()
	r.tools[tool.Name] = tool
	r.order = append(r.order, tool.Name)
	gen, err := r.newGeneration(r.Config())
	if err != nil {
		t.Fatal(err)
	}
	r.gen.Store(gen)
}

type noArgs struct{}

func (*noArgs) Validate() error { return nil }

func testTool(name string, tier toolkit.Tier, handle func(context.Context, *toolkit.Env, toolkit.Args) (*toolkit.Result, error)) toolkit.Tool {
	return toolkit.Tool{
		Name: name, Tier: tier, InputSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
		NewArgs: func() toolkit.Args { return &noArgs{} }, Capability: func(toolkit.Args) string { return "test." + name },
		Handle: handle,
	}
}

// TestUnwritableStoreRefusesEveryCall: a store that really cannot write
// (max_page_count reached, as with a full disk) turns every call into
// AUDIT_UNAVAILABLE, with none of the tool's output.
func TestUnwritableStoreRefusesEveryCall(t *testing.T) {
	r, _ := newRunner(t, nil)
	s := openSession(t, r)
	if resp := s.Run(context.Background(), Call{Tool: "list_pools"}); resp.IsError {
		t.Fatalf("before: %s", resp.Text)
	}
	r.db.Close() // checkpoints the WAL, so the file size is the page count
	pages := pageCount(t, r.db.Path())
	var err error
	if r.db, err = store.Open(r.db.Path(), &store.Options{MaxPageCount: pages}); err != nil {
		t.Fatal(err)
	}
	executed := false
	addTool(t, r, testTool("act", toolkit.TierAct, func(context.Context, *toolkit.Env, toolkit.Args) (*toolkit.Result, error) {
		executed = true
		return &toolkit.Result{Text: "did it"}, nil
	}))
	setPhase(t, r, s, phasegate.Execution)
	for _, tool := range []string{"list_pools", "read_pool_file", "act", "no_such_tool"} {
		args := json.RawMessage(`{}`)
		if tool == "read_pool_file" {
			args = json.RawMessage(`{"pool":"p","path":"long.txt"}`)
		}
		// Grow the file's demand: each call's record needs new pages soon enough.
		for range 50 {
			resp := s.Run(context.Background(), Call{Tool: tool, Args: args})
			if resp.IsError && resp.Code == violation.AuditUnavailable {
				if strings.Contains(resp.Text, "é") || strings.Contains(resp.Text, "did it") {
					t.Fatalf("%s: output leaked with refusal: %s", tool, resp.Text)
				}
				goto next
			}
		}
		t.Fatalf("%s: never refused although the store cannot grow", tool)
	next:
	}
	if executed {
		t.Fatal("an act-tier tool executed although its start could not be audited")
	}
}

func pageCount(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size() / 4096
}

func TestUnknownPhaseBlocksEverything(t *testing.T) {
	r, _ := newRunner(t, nil)
	s := openSession(t, r)
	// Not a phase Airlock knows: the store refuses to write one, so only a
	// tampered file can hold it — and the call must still be blocked.
	raw, err := sql.Open("sqlite", r.db.Path())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`UPDATE contexts SET phase = 'review' WHERE id = $1`, s.ContextID()); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	resp := s.Run(context.Background(), Call{Tool: "list_pools"})
	if resp.Code != violation.PhaseBlocked {
		t.Fatalf("got %s %s", resp.Code, resp.Text)
	}
	if rec := lastRecord(t, r); rec.Violation != string(violation.PhaseBlocked) || rec.Outcome != "denied" {
		t.Fatalf("record %+v", rec)
	}
}

func TestActBlockedInPlanning(t *testing.T) {
	r, _ := newRunner(t, nil)
	s := openSession(t, r)
	addTool(t, r, testTool("act", toolkit.TierAct, func(context.Context, *toolkit.Env, toolkit.Args) (*toolkit.Result, error) {
		t.Fatal("executed in planning")
		return nil, nil
	}))
	if resp := s.Run(context.Background(), Call{Tool: "act"}); resp.Code != violation.PhaseBlocked {
		t.Fatalf("got %s", resp.Text)
	}
}

func TestPanicAndRawErrorsAreBounded(t *testing.T) {
	r, _ := newRunner(t, nil)
	s := openSession(t, r)
	addTool(t, r, testTool("boom", toolkit.TierRead, func(context.Context, *toolkit.Env, toolkit.Args) (*toolkit.Result, error) {
		panic("secret host path /srv/data/x")
	}))
	addTool(t, r, testTool("fail", toolkit.TierRead, func(context.Context, *toolkit.Env, toolkit.Args) (*toolkit.Result, error) {
		return nil, fmt.Errorf("open /etc/airlock/key: %w", os.ErrPermission)
	}))
	for _, name := range []string{"boom", "fail"} {
		resp := s.Run(context.Background(), Call{Tool: name})
		if resp.Code != violation.Internal || strings.Contains(resp.Text, "/") || !strings.Contains(resp.Text, "ref ") {
			t.Fatalf("%s: %s", name, resp.Text)
		}
		rec := lastRecord(t, r)
		if rec.ErrorRef == "" || !strings.Contains(resp.Text, rec.ErrorRef) || rec.Error == "" || rec.Outcome != "error" {
			t.Fatalf("%s: record %+v", name, rec)
		}
	}
}

func TestTruncationSaysSoAndKeepsRunes(t *testing.T) {
	r, _ := newRunner(t, nil)
	s := openSession(t, r)
	addTool(t, r, testTool("long", toolkit.TierRead, func(context.Context, *toolkit.Env, toolkit.Args) (*toolkit.Result, error) {
		return &toolkit.Result{Text: strings.Repeat("é", 100)}, nil
	}))
	resp := s.Run(context.Background(), Call{Tool: "long"})
	if resp.IsError || !resp.Truncated || !strings.Contains(resp.Text, "[output truncated: showing 64 of 200 bytes]") {
		t.Fatalf("%+v", resp)
	}
	if !strings.HasPrefix(resp.Text, strings.Repeat("é", 32)) {
		t.Fatalf("cut inside a rune: %q", resp.Text)
	}
	if rec := lastRecord(t, r); !rec.Truncated {
		t.Fatalf("record not marked truncated: %+v", rec)
	}
}

// TestExactResultIsNeverCut: a page (read_pool_file) is never truncated,
// since its next_offset would then skip the bytes cut off (issue 10 item
// 11). With 64 bytes of output there is no room for one page of long.txt
// and its paging hint: LIMIT_EXCEEDED, not a cut page. A tool that marks its
// result exact and still overflows fails closed.
func TestExactResultIsNeverCut(t *testing.T) {
	r, _ := newRunner(t, nil)
	s := openSession(t, r)
	resp := s.Run(context.Background(), Call{Tool: "read_pool_file", Args: json.RawMessage(`{"pool":"p","path":"long.txt"}`)})
	if !resp.IsError || resp.Code != violation.LimitExceeded || resp.Truncated {
		t.Fatalf("want LIMIT_EXCEEDED, got %+v", resp)
	}
	addTool(t, r, testTool("overflow", toolkit.TierRead, func(context.Context, *toolkit.Env, toolkit.Args) (*toolkit.Result, error) {
		return &toolkit.Result{Text: strings.Repeat("x", 65), Exact: true}, nil
	}))
	if resp := s.Run(context.Background(), Call{Tool: "overflow"}); !resp.IsError || resp.Code != violation.Internal {
		t.Fatalf("want INTERNAL_ERROR, got %+v", resp)
	}
}

func TestStartedRecordPrecedesAct(t *testing.T) {
	r, _ := newRunner(t, nil)
	s := openSession(t, r)
	setPhase(t, r, s, phasegate.Execution)
	var seqAtExecution int64
	addTool(t, r, testTool("act", toolkit.TierAct, func(ctx context.Context, _ *toolkit.Env, _ toolkit.Args) (*toolkit.Result, error) {
		seqAtExecution, _ = r.db.LastSeq(ctx)
		return &toolkit.Result{Text: "ok"}, nil
	}))
	resp := s.Run(context.Background(), Call{Tool: "act"})
	if resp.IsError {
		t.Fatal(resp.Text)
	}
	recs, _ := r.db.Tail(context.Background(), 2)
	if recs[0].Outcome != "started" || recs[0].Seq != seqAtExecution || recs[1].Outcome != "ok" {
		t.Fatalf("records %+v, seq at execution %d", recs, seqAtExecution)
	}
}

func TestUnknownRole(t *testing.T) {
	r, _ := newRunner(t, nil)
	_, err := r.OpenSession(context.Background(), SessionParams{Principal: "x", Role: "admin"})
	if !errors.Is(err, ErrUnknownRole) {
		t.Fatalf("err = %v", err)
	}
}
