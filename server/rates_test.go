package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/operator/operator"
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

	op, err := operator.Open(f.state, false)
	must(t, err)
	_, handle, err := op.CreateChild(context.Background(), f.cfg, operator.ChildSpec{Parent: f.localDefault(), Pools: []string{"alpha"}}, "tester", "a child for the rate test")
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
		inChild = inChild || (r.Tool == "read_pool_file" && r.ContextID != f.localDefault() && r.ContextID != "")
	}
	if !inChild {
		t.Fatal("no call was recorded in the child context")
	}
}

// TestContextWhosePolicyWasRemovedIsRefused: a child context runs under a
// policy a reload then removes; its next call is refused (fail closed:
// never run under no policy, or silently under another), and audited.
func TestContextWhosePolicyWasRemovedIsRefused(t *testing.T) {
	cfg := fmt.Sprintf(testConfig, "local")
	cfg = strings.Replace(cfg, "policies:\n", "policies:\n  narrow:\n    extends: base\n    deny: [\"pool.list\"]\n", 1)
	f := newFixtureConfig(t, cfg)
	call(t, f.connect(t), "list_pools", nil) // the default context exists
	op, err := operator.Open(f.state, false)
	must(t, err)
	_, handle, err := op.CreateChild(context.Background(), f.cfg, operator.ChildSpec{Parent: f.localDefault(), Policy: "narrow"}, "tester", "narrow policy")
	op.Close()
	must(t, err)
	child, err := New(f.r, &Options{StdioContext: handle})
	must(t, err)
	defer child.Close()
	cc := (&fixture{dir: f.dir, state: f.state, cfg: f.cfg, r: f.r, srv: child}).connect(t)
	read := map[string]any{"pool": "alpha", "path": "hello.txt"}
	if res := call(t, cc, "read_pool_file", read); res.IsError {
		t.Fatalf("under narrow: %s", text(res))
	}
	// Reload without the narrow policy.
	reloaded := strings.Replace(string(f.cfg.Bytes()), "  narrow:\n    extends: base\n    deny: [\"pool.list\"]\n", "", 1)
	path := filepath.Join(f.dir, "airlock.yaml")
	must(t, os.WriteFile(path, []byte(reloaded), 0o644))
	newCfg, err := config.Load(path)
	must(t, err)
	must(t, f.r.Reload(context.Background(), newCfg, "test"))
	res := call(t, cc, "read_pool_file", read)
	if !res.IsError || (code(res) != "UNAVAILABLE" && code(res) != "CONTEXT_INVALID") {
		t.Fatalf("a context whose policy is gone still ran: %s", text(res))
	}
	recs := f.auditRecords(t)
	if last := recs[len(recs)-1]; last.Tool != "read_pool_file" || last.Outcome == "ok" {
		t.Fatalf("the refusal is not the last record: %+v", last)
	}
}
