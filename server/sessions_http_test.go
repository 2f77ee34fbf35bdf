package server

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// Server-issued HTTP sessions are handles onto the principal's context:
// bound to that principal, capped, expiring when idle; and the context's
// limits outlive every handle, and the process.

// wantStatus checks a raw reply's status and that the gate audited the
// refusal with code for principal (a new record, counted from before).
func (w *web) wantRefusal(t *testing.T, r *httpReply, status int, code, principal string, before int) {
	t.Helper()
	if r.status != status {
		t.Fatalf("HTTP %d, want %d: %s", r.status, status, r.body)
	}
	recs := w.sessionRefusals(t, code)
	if len(recs) != before+1 {
		t.Fatalf("%d %s records, want %d", len(recs), code, before+1)
	}
	if last := recs[len(recs)-1]; last.Principal != principal || last.Decision != "deny" {
		t.Fatalf("refusal record: %+v", last)
	}
}

// TestLimitsOutliveSessionsAndRestarts: max_actions is the context's; a
// DELETE, a new session, a sessionless client or a restart of the server
// does not give the principal a fresh budget.
func TestLimitsOutliveSessionsAndRestarts(t *testing.T) {
	w := webFixture(t)
	c := w.legacyClient(t, "metered", nil)
	for i := range 3 {
		if res := call(t, c, "list_pools", nil); res.IsError {
			t.Fatalf("call %d: %s", i+1, text(res))
		}
	}
	over := call(t, c, "list_pools", nil)
	wantCode(t, over, "LIMIT_EXCEEDED")
	if e, _ := structured(t, over)["error"].(map[string]any); e["limit"] != "max_actions" || e["retry_after_ms"] != nil {
		t.Fatalf("structured error: %v", e)
	}

	// (a) DELETE the session: it is gone, the usage is not.
	sid := c.GetSessionId()
	if r := w.deleteSession(t, "metered", sid); r.status >= 300 {
		t.Fatalf("DELETE: HTTP %d: %s", r.status, r.body)
	}
	w.wantRefusal(t, w.legacyCall(t, "metered", sid, "list_pools", nil), http.StatusNotFound, "SESSION_EXPIRED", principalOf("metered"), 0)
	wantCode(t, call(t, w.legacyClient(t, "metered", nil), "list_pools", nil), "LIMIT_EXCEEDED")
	// (b) a brand-new client, sessionless.
	wantCode(t, call(t, w.modernClient(t, "metered", nil), "list_pools", nil), "LIMIT_EXCEEDED")

	// (c) a restart: a new runner and server on the same state directory.
	w.restart(t)
	w2 := w
	wantCode(t, call(t, w2.legacyClient(t, "metered", nil), "list_pools", nil), "LIMIT_EXCEEDED")
	wantCode(t, w2.modernCall(t, "metered", nil, false, "list_pools", nil, nil).result(t), "LIMIT_EXCEEDED")

	recs := w2.toolRecords(t, "list_pools", "LIMIT_EXCEEDED")
	if len(recs) != 5 {
		t.Fatalf("%d LIMIT_EXCEEDED records, want 5", len(recs))
	}
	for _, r := range recs {
		if r.ContextID != defaultOf("metered") {
			t.Fatalf("refused in context %s: %+v", r.ContextID, r)
		}
	}
	if ok := w2.toolRecords(t, "list_pools", ""); len(ok) != 3 {
		t.Fatalf("%d calls admitted, want 3", len(ok))
	}
}

// TestRateLimitSaysWhenToRetry: a rate refusal tells the agent when to
// come back, in its message and as structured retry_after_ms.
func TestRateLimitSaysWhenToRetry(t *testing.T) {
	o := newOrigin(t)
	f := newFixture(t, "fetcher")
	c := f.connect(t)
	for i := range 4 {
		if res := call(t, c, "declare_need", need(o.URL+"/doc"+string(rune('a'+i)))); res.IsError {
			t.Fatalf("fetch %d: %s", i, text(res))
		}
	}
	res := call(t, c, "declare_need", need(o.URL+"/one-too-many"))
	wantCode(t, res, "LIMIT_EXCEEDED")
	if !strings.Contains(text(res), "retry in") {
		t.Fatalf("no retry time: %s", text(res))
	}
	e, _ := structured(t, res)["error"].(map[string]any)
	if ms, _ := e["retry_after_ms"].(float64); e["limit"] != "rate" || ms <= 0 || ms > 60_000 {
		t.Fatalf("structured error: %v", e)
	}
	if recs := f.toolRecords(t, "declare_need", "LIMIT_EXCEEDED"); len(recs) != 1 || !strings.Contains(recs[0].Reason+recs[0].Error, "retry") {
		t.Fatalf("rate refusal audit: %+v", recs)
	}
	if o.hits.Load() != 4 {
		t.Fatalf("%d origin hits, want 4", o.hits.Load())
	}
}

// TestSessionIsBoundToItsPrincipal: another principal holding a session
// id can neither use nor close it; unknown, missing and closed ids are
// refused, each with its status and audited code.
func TestSessionIsBoundToItsPrincipal(t *testing.T) {
	w := webFixture(t)
	a := w.legacyClient(t, "agent", nil)
	sidA := a.GetSessionId()
	callOK(t, a, "list_pools", nil)
	b := principalOf("agent-b")
	w.wantRefusal(t, w.legacyCall(t, "agent-b", sidA, "list_pools", nil), http.StatusNotFound, "SESSION_FOREIGN", b, 0)
	w.wantRefusal(t, w.deleteSession(t, "agent-b", sidA), http.StatusNotFound, "SESSION_FOREIGN", b, 1)
	w.wantRefusal(t, w.send(t, http.MethodGet, "agent-b", map[string]string{"Mcp-Session-Id": sidA,
		mcp.HeaderProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION}, nil), http.StatusNotFound, "SESSION_FOREIGN", b, 2)
	if res := call(t, a, "list_pools", nil); res.IsError {
		t.Fatalf("A's session after B's attempts: %s", text(res))
	}
	for _, r := range w.toolRecords(t, "list_pools", "") {
		if r.Principal != principalOf("agent") {
			t.Fatalf("B ran a call: %+v", r)
		}
	}

	me := principalOf("agent")
	w.wantRefusal(t, w.legacyCall(t, "agent", "mcp-session-made-up", "list_pools", nil), http.StatusNotFound, "SESSION_UNKNOWN", me, 0)
	w.wantRefusal(t, w.legacyCall(t, "agent", "", "list_pools", nil), http.StatusBadRequest, "SESSION_REQUIRED", me, 0)
	if r := w.deleteSession(t, "agent", sidA); r.status >= 300 {
		t.Fatalf("A's DELETE: HTTP %d: %s", r.status, r.body)
	}
	w.wantRefusal(t, w.legacyCall(t, "agent", sidA, "list_pools", nil), http.StatusNotFound, "SESSION_EXPIRED", me, 0)
	// The presented id is audited only as a keyed hash: it may be live.
	for _, r := range w.auditRecords(t) {
		if r.Capability == "transport.session" && strings.Contains(string(r.Extra)+r.Reason, sidA) {
			t.Fatalf("a presented session id in the audit trail: %+v", r)
		}
	}
}

// TestForeignSessionLooksUnknown: the 404 for another principal's live
// session must read exactly like the one for an id never issued, or it
// tells the holder of a stolen id that the id is live.
func TestForeignSessionLooksUnknown(t *testing.T) {
	w := webFixture(t)
	sidA := w.legacyClient(t, "agent", nil).GetSessionId()
	foreign := w.legacyCall(t, "agent-b", sidA, "list_pools", nil)
	unknown := w.legacyCall(t, "agent-b", "mcp-session-"+strings.Repeat("0", 36), "list_pools", nil)
	if foreign.status != unknown.status || foreign.body != unknown.body {
		t.Fatalf("foreign: %d %s\nunknown: %d %s", foreign.status, foreign.body, unknown.status, unknown.body)
	}
}

// TestSessionIdleTimeout: a session unused for longer than the idle
// timeout is refused (404), audited, and its context lives on.
func TestSessionIdleTimeout(t *testing.T) {
	w := webFixtureHTTP(t, "session_idle_timeout_seconds: 1")
	c := w.legacyClient(t, "agent", nil)
	callOK(t, c, "list_pools", nil)
	time.Sleep(1500 * time.Millisecond)
	w.wantRefusal(t, w.legacyCall(t, "agent", c.GetSessionId(), "list_pools", nil), http.StatusNotFound, "SESSION_EXPIRED", principalOf("agent"), 0)
	if res := call(t, w.legacyClient(t, "agent", nil), "list_pools", nil); res.IsError {
		t.Fatalf("a new session after the timeout: %s", text(res))
	}
}

// TestActiveSessionDoesNotIdleOut: a session in use is not closed by an
// idle timeout shorter than the interval at which last-seen is written.
//
// The server judges idleness on the real clock, so a call is held to it
// only when the previous one started less than idle − idle/4 (the touch
// interval) before it: on a machine loaded enough to stretch that gap the
// expiry would be right, and the call is not judged (logged) — the verdict
// never rests on the scheduler keeping up.
func TestActiveSessionDoesNotIdleOut(t *testing.T) {
	const idle = 4 * time.Second // shorter than touchEvery (5 s): last-seen is written every idle/4
	w := webFixtureHTTP(t, "session_idle_timeout_seconds: 4")
	c := w.legacyClient(t, "agent", nil)
	prev := time.Now()
	judged := 0
	for i := range 8 {
		start := time.Now()
		r := w.legacyCall(t, "agent", c.GetSessionId(), "list_pools", nil)
		switch gap := start.Sub(prev); {
		case gap >= idle-idle/4:
			t.Logf("call %d came %v after the previous one: not judged", i, gap)
		case r.status != http.StatusOK:
			t.Fatalf("call %d, %v after the previous one, in a session used every 500ms: HTTP %d: %s", i, gap, r.status, r.body)
		default:
			judged++
		}
		prev = start
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("%d of 8 calls judged", judged)
}

// TestTwoProcessesOneStore: two servers on one state directory serve the
// same contexts: a need declared on one, approved by the operator, is
// collected on the other; max_actions is shared.
func TestTwoProcessesOneStore(t *testing.T) {
	o := newOrigin(t)
	w1 := webFixture(t)
	w2 := w1.second(t)
	res := call(t, w1.legacyClient(t, "web-operator", nil), "declare_need", need(o.URL+"/gated/shared"))
	if res.IsError || !strings.Contains(text(res), "airlock approvals approve") {
		t.Fatalf("pending on server 1: %s", text(res))
	}
	id := structured(t, res)["declaration_id"].(string)
	w1.operatorApprove(t, id)
	got := w2.modernCall(t, "web-operator", nil, false, "declare_need", map[string]any{"declaration_id": id}, nil).result(t)
	if got.IsError || !strings.Contains(text(got), "content of /gated/shared") || o.hits.Load() != 1 {
		t.Fatalf("collect on server 2: %s (%d hits)", text(got), o.hits.Load())
	}
	again := call(t, w1.legacyClient(t, "web-operator", nil), "declare_need", map[string]any{"declaration_id": id})
	wantCode(t, again, "APPROVAL_REQUIRED")

	c1, c2 := w1.legacyClient(t, "metered", nil), w2.legacyClient(t, "metered", nil)
	for i, c := range []func() *mcp.CallToolResult{
		func() *mcp.CallToolResult { return call(t, c1, "list_pools", nil) },
		func() *mcp.CallToolResult { return call(t, c2, "list_pools", nil) },
		func() *mcp.CallToolResult {
			return w2.modernCall(t, "metered", nil, false, "list_pools", nil, nil).result(t)
		},
	} {
		if res := c(); res.IsError {
			t.Fatalf("call %d: %s", i+1, text(res))
		}
	}
	wantCode(t, call(t, c2, "list_pools", nil), "LIMIT_EXCEEDED")
	wantCode(t, call(t, c1, "list_pools", nil), "LIMIT_EXCEEDED")
	wantCode(t, w1.modernCall(t, "metered", nil, false, "list_pools", nil, nil).result(t), "LIMIT_EXCEEDED")
	if recs := w1.toolRecords(t, "list_pools", "LIMIT_EXCEEDED"); len(recs) != 3 {
		t.Fatalf("%d LIMIT_EXCEEDED records, want 3", len(recs))
	}
}

// TestSessionServedByAnotherProcess: a session issued by one process is
// usable on another process on the same store (its id is in the store).
func TestSessionServedByAnotherProcess(t *testing.T) {
	w1 := webFixture(t)
	w2 := w1.second(t)
	sid := w1.legacyClient(t, "agent", nil).GetSessionId()
	r := w2.legacyCall(t, "agent", sid, "list_pools", nil)
	if r.status != http.StatusOK {
		t.Fatalf("server 2 with server 1's session: HTTP %d: %s", r.status, r.body)
	}
	if res := r.result(t); res.IsError || !strings.Contains(text(res), "alpha") {
		t.Fatalf("server 2 with server 1's session: %s", text(res))
	}
	// ...and still only for its principal.
	w2.wantRefusal(t, w2.legacyCall(t, "agent-b", sid, "list_pools", nil), http.StatusNotFound, "SESSION_FOREIGN", principalOf("agent-b"), 0)
}

// TestSSESessionIsBoundToItsPrincipal: another principal's token on an SSE
// session id (POST /message?sessionId=…) does not get that session's
// context: the call is refused SESSION_FOREIGN (audited), no tool runs for
// it, and the session's owner keeps working.
func TestSSESessionIsBoundToItsPrincipal(t *testing.T) {
	f, ts := httpFixture(t)
	t.Setenv("AIRLOCK_TEST_TOKEN_B", tokenOf("agent-b"))
	must(t, f.srv.Reload())
	a := sseBearerClient(t, ts.URL, testToken)
	callOK(t, a, "list_pools", nil)
	sse, _ := a.GetTransport().(*transport.SSE)
	if sse == nil || sse.GetEndpoint() == nil {
		t.Fatal("no SSE message endpoint")
	}
	sid := sse.GetEndpoint().Query().Get("sessionId")
	if sid == "" {
		t.Fatalf("no session id in %s", sse.GetEndpoint())
	}
	// Refused before mcp-go sees it (sse.go): no polling for an
	// asynchronous answer.
	if status, body := postMessage(t, ts.URL, tokenOf("agent-b"), sid, strings.Replace(sseRead, "%s", "99", 1)); status != http.StatusNotFound {
		t.Fatalf("another principal's post: HTTP %d %s", status, body)
	}
	for _, r := range f.auditRecords(t) {
		if r.Principal == principalOf("agent-b") && r.Tool == "read_pool_file" {
			t.Fatal("another principal read through the SSE session")
		}
	}
	if recs := f.sessionRefusals(t, string(violation.SessionForeign)); len(recs) != 1 || recs[0].Principal != principalOf("agent-b") {
		t.Fatalf("the foreign use of the SSE session was not audited: %+v", recs)
	}
	if res := call(t, a, "read_pool_file", map[string]any{"pool": "alpha", "path": "hello.txt"}); res.IsError {
		t.Fatalf("the owner lost its session: %s", text(res))
	}
}
