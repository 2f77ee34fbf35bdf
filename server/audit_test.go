package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// TestEveryCallIsAudited: successes, violations, validation failures and
// unknown tools each leave exactly one record, and the chain verifies.
func TestEveryCallIsAudited(t *testing.T) {
	f := newFixture(t, "local")
	c := f.connect(t)
	call(t, c, "read_pool_file", map[string]any{"pool": "alpha", "path": "hello.txt"})
	call(t, c, "read_pool_file", map[string]any{"pool": "alpha", "path": "../x"})
	call(t, c, "read_pool_file", map[string]any{"pool": "alpha", "bogus": true})
	req := mcp.CallToolRequest{}
	req.Params.Name = "delete_everything"
	if _, err := c.CallTool(context.Background(), req); err == nil {
		t.Fatal("unknown tool accepted")
	}
	recs := f.auditRecords(t)
	byOutcome := map[string]audit.Record{}
	for _, r := range recs {
		byOutcome[r.Tool+"/"+r.Violation] = r
	}
	ok, found := byOutcome["read_pool_file/"]
	if !found || ok.Outcome != "ok" || ok.Capability != "pool.read" || ok.Tier != "read" || ok.Decision != "allow" || ok.RuleID == "" {
		t.Errorf("success record wrong: %+v", ok)
	}
	if ok.Principal != "local" || ok.SessionID == "" || ok.ContextID == "" || ok.OutputBytes == 0 || ok.Hash == "" {
		t.Errorf("success record lacks attribution: %+v", ok)
	}
	if !strings.Contains(string(ok.Args), "hello.txt") {
		t.Errorf("args not recorded: %s", ok.Args)
	}
	if r, found := byOutcome["read_pool_file/PATH_OUTSIDE_POOLS"]; !found || r.Outcome != "violation" {
		t.Errorf("violation not recorded: %+v", recs)
	}
	if _, found := byOutcome["read_pool_file/INVALID_ARGUMENTS"]; !found {
		t.Errorf("validation failure not recorded")
	}
	if r, found := byOutcome["delete_everything/UNKNOWN_TOOL"]; !found || r.Outcome != "violation" {
		t.Errorf("unknown tool not recorded: %+v", recs)
	}
	if v := f.verifyAudit(t); v.Records != int64(len(recs)) {
		t.Fatalf("verify: %+v (records %d)", v, len(recs))
	}
}

func TestAuditSeqInMeta(t *testing.T) {
	c := newFixture(t, "local").connect(t)
	res := call(t, c, "list_pools", nil)
	if res.Meta == nil || res.Meta.AdditionalFields["airlock/audit_seq"] == nil {
		t.Fatalf("no audit seq in _meta: %+v", res.Meta)
	}
}

func TestSecretsRedactedInAudit(t *testing.T) {
	f := newFixture(t, "local")
	c := f.connect(t)
	// An argument the schema refuses is still recorded — redacted.
	call(t, c, "read_pool_file", map[string]any{"pool": "alpha", "path": "hello.txt", "api_token": "s3cr3t-value"})
	for _, r := range f.auditRecords(t) {
		if strings.Contains(string(r.Args), "s3cr3t-value") {
			t.Fatalf("secret in audit record: %s", r.Args)
		}
	}
}

func TestPolicyDenies(t *testing.T) {
	f := newFixture(t, "lister")
	c := f.connect(t)
	if res := call(t, c, "list_pools", nil); res.IsError {
		t.Fatalf("list allowed by policy: %s", text(res))
	}
	res := call(t, c, "read_pool_file", map[string]any{"pool": "alpha", "path": "hello.txt"})
	if code(res) != "POLICY_DENIED" {
		t.Fatalf("read not denied: %s", text(res))
	}
	recs := f.auditRecords(t)
	last := recs[len(recs)-1]
	if last.Decision != "deny" || last.RuleID == "" || last.Reason == "" || last.Outcome != "denied" {
		t.Fatalf("denial record lacks rule and reason: %+v", last)
	}
}

func TestMaxActionsLimit(t *testing.T) {
	c := newFixture(t, "limited").connect(t)
	for i := range 2 {
		if res := call(t, c, "list_pools", nil); res.IsError {
			t.Fatalf("call %d: %s", i, text(res))
		}
	}
	res := call(t, c, "list_pools", nil)
	if code(res) != "LIMIT_EXCEEDED" || !strings.Contains(text(res), "max_actions") {
		t.Fatalf("third call: %s", text(res))
	}
}

func TestKillSwitch(t *testing.T) {
	f := newFixture(t, "local")
	c := f.connect(t)
	callOK(t, c, "list_pools", nil)
	// The operator trips the switch from "another process": a separate handle on the store.
	op, err := operator.Open(f.state, false)
	must(t, err)
	must(t, op.SetKillSwitch(context.Background(), true, "tester", "incident drill"))
	// Every call reads the switch itself: the next one is refused.
	if res := call(t, c, "list_pools", nil); code(res) != "KILL_SWITCH_ENGAGED" {
		t.Fatalf("kill switch not honoured: %s", text(res))
	}
	must(t, op.SetKillSwitch(context.Background(), false, "tester", "drill over"))
	op.Close()
	if res := call(t, c, "list_pools", nil); res.IsError {
		t.Fatalf("after release: %s", text(res))
	}
	var sawKill bool
	for _, r := range f.auditRecords(t) {
		if r.Capability == "operator.kill_switch" && strings.HasPrefix(r.Principal, "operator:") {
			sawKill = true
		}
	}
	if !sawKill {
		t.Fatal("operator kill switch change not audited")
	}
}

func TestStructuredErrors(t *testing.T) {
	c := newFixture(t, "local").connect(t)
	res := call(t, c, "read_pool_file", map[string]any{"pool": "nope", "path": "x"})
	m := structured(t, res)
	b, _ := json.Marshal(m)
	if !strings.Contains(string(b), `"code":"UNKNOWN_POOL_ID"`) {
		t.Fatalf("structured error: %s", b)
	}
}
