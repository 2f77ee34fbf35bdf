package server

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/contexts"
	"github.com/airlock-dev/airlock/runner"
)

// TestRateIsThePrincipalsAcrossContexts: rates are keyed to the principal,
// not the context, so moving to a child context (which an operator made
// for the same principal) gives no fresh rate budget.
func TestRateIsThePrincipalsAcrossContexts(t *testing.T) {
	cfg := fmt.Sprintf(testConfig, "local")
	cfg = strings.Replace(cfg, "policies:\n", "policies:\n  rated:\n    extends: base\n    limits: {rate: {\"pool.read\": {per_minute: 2, burst: 2}}}\n", 1)
	cfg = strings.Replace(cfg, "  local: {policy: base, pools: [alpha, beta]}\n", "  local: {policy: rated, pools: [alpha, beta]}\n", 1)
	f := newFixtureConfig(t, cfg)
	c := f.connect(t)
	read := map[string]any{"pool": "alpha", "path": "hello.txt"}
	for i := range 2 {
		if res := call(t, c, "read_pool_file", read); res.IsError {
			t.Fatalf("read %d: %s", i, text(res))
		}
	}
	wantCode(t, call(t, c, "read_pool_file", read), "LIMIT_EXCEEDED")

	op, err := runner.OpenOperator(f.state, false)
	must(t, err)
	_, handle, err := op.CreateChild(context.Background(), f.cfg, runner.ChildSpec{Parent: contexts.DefaultID("local"), Pools: []string{"alpha"}}, "tester", "a child for the rate test")
	op.Close()
	must(t, err)
	child, err := New(f.r, &Options{StdioContext: handle})
	must(t, err)
	defer child.Close()
	cf := &fixture{dir: f.dir, state: f.state, cfg: f.cfg, r: f.r, srv: child}
	cc := cf.connect(t)
	res := call(t, cc, "read_pool_file", read)
	wantCode(t, res, "LIMIT_EXCEEDED")
	if !strings.Contains(text(res), "rate") {
		t.Fatalf("refused, but not for the rate: %s", text(res))
	}
	// It really ran in the child context.
	var inChild bool
	for _, r := range f.auditRecords(t) {
		inChild = inChild || (r.Tool == "read_pool_file" && r.ContextID != contexts.DefaultID("local") && r.ContextID != "")
	}
	if !inChild {
		t.Fatal("no call was recorded in the child context")
	}
}
