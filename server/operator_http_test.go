package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// postOperator sends body to POST /operator/contexts with token ("" = none).
func (w *web) postOperator(t *testing.T, method, token, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, w.ts.URL+PathOperatorContexts, strings.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := w.ts.Client().Do(req)
	must(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

func (w *web) contextCount(t *testing.T) int {
	t.Helper()
	op, err := operator.Open(w.state, true)
	must(t, err)
	defer op.Close()
	cs, err := op.Contexts(context.Background(), "")
	must(t, err)
	return len(cs)
}

// TestOperatorContextsRefusesAgent: only a static token of
// transports.http.console_role creates a context with a task through
// POST /operator/contexts: no token and an unknown one are 401, an agent's
// token (any other role) is 403; each refusal is an edge record and
// creates nothing.
func TestOperatorContextsRefusesAgent(t *testing.T) {
	w := consoleWeb(t, "console_role: admin")
	call(t, w.connect(t), "list_pools", nil)
	body := `{"parent": "` + w.localDefault() + `", "task": "Pay the rent.", "reason": "hosted agent"}`
	before := w.contextCount(t)
	for _, tc := range []struct {
		name, token string
		status      int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"unknown token", "not-a-token-0123456789abcdef0123", http.StatusUnauthorized},
		{"agent token", tokenOf("agent"), http.StatusForbidden},
		{"client-approver agent token", tokenOf("web-client"), http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, out := w.postOperator(t, http.MethodPost, tc.token, body)
			if status != tc.status || out["error"] == nil || out["handle"] != nil {
				t.Fatalf("status %d, body %v", status, out)
			}
		})
	}
	if n := w.contextCount(t); n != before {
		t.Fatalf("a refused request created %d contexts", n-before)
	}
	if recs := w.edgeRecordsOf(t, transportOperatorHTTP); recs < 4 {
		t.Fatalf("%d edge refusal records for the operator API, want 4", recs)
	}
}

// edgeRecordsOf counts the audit's edge refusals of a transport.
func (w *web) edgeRecordsOf(t *testing.T, transport string) int {
	t.Helper()
	n := 0
	for _, r := range w.auditRecords(t) {
		if r.Transport == transport && r.Outcome != "ok" {
			n++
		}
	}
	return n
}

// TestOperatorContextsCreate: the admin's token creates a child context
// whose task is its trusted input; the creation and the task are audited
// under the admin's principal on transport operator-http; the handle runs
// a client in the child. Malformed bodies are typed 4xx errors.
func TestOperatorContextsCreate(t *testing.T) {
	w := consoleWeb(t, "console_role: admin")
	call(t, w.connect(t), "list_pools", nil)
	parent := w.localDefault()
	status, out := w.postOperator(t, http.MethodPost, adminToken,
		`{"parent": "`+parent+`", "task": "Pay the rent to DE89 3704 0044 0532 0130 00.", "reason": "hosted agent"}`)
	if status != http.StatusCreated || out["context"] == nil || out["handle"] == nil {
		t.Fatalf("create: %d %v", status, out)
	}
	cx := out["context"].(string)
	op, err := operator.Open(w.state, true)
	must(t, err)
	p, err := op.ContextProvenance(context.Background(), cx)
	op.Close()
	must(t, err)
	if len(p.Inputs) != 1 || p.Inputs[0].ID != operator.TaskInputID || !strings.HasPrefix(p.Inputs[0].AddedBy, "operator:admin/") {
		t.Fatalf("trusted inputs: %+v", p.Inputs)
	}
	var created, tasked bool
	for _, r := range w.auditRecords(t) {
		if r.ContextID == cx && r.Transport == transportOperatorHTTP && strings.HasPrefix(r.Principal, "operator:admin/") && r.Outcome == "ok" {
			created = created || r.Capability == "operator.context_create"
			tasked = tasked || r.Capability == "operator.context_task"
		}
	}
	if !created || !tasked {
		t.Fatalf("audit: created %v, task %v", created, tasked)
	}
	if res := w.fixture.child(t, w.r, out["handle"].(string)).call(t, "list_pools", nil); res.IsError {
		t.Fatalf("a client in the new context: %s", text(res))
	}
	for _, tc := range []struct {
		name, method, body string
		status             int
	}{
		{"duplicate key", "POST", `{"parent": "` + parent + `", "task": "a", "Task": "b", "reason": "r"}`, http.StatusBadRequest},
		{"unknown field", "POST", `{"parent": "` + parent + `", "task": "a", "reason": "r", "trusted": true}`, http.StatusBadRequest},
		{"no task", "POST", `{"parent": "` + parent + `", "reason": "r"}`, http.StatusBadRequest},
		{"no reason", "POST", `{"parent": "` + parent + `", "task": "a"}`, http.StatusBadRequest},
		{"trailing data", "POST", `{"parent": "` + parent + `", "task": "a", "reason": "r"} {}`, http.StatusBadRequest},
		{"unknown parent", "POST", `{"parent": "ctx_nope", "task": "a", "reason": "r"}`, http.StatusNotFound},
		{"wider than its parent", "POST", `{"parent": "` + parent + `", "task": "a", "phase": "execution", "reason": "r"}`, http.StatusUnprocessableEntity},
		{"GET", "GET", ``, http.StatusMethodNotAllowed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if status, out := w.postOperator(t, tc.method, adminToken, tc.body); status != tc.status || out["error"] == nil {
				t.Fatalf("status %d, body %v", status, out)
			}
		})
	}
}
