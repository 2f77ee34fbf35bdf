package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/internal/testkit/testidp"
)

// Credentials bound to contexts (issue 26 item 2) and default contexts
// keyed by role (item 11).

// createChild creates a child context as the operator would and returns
// its id and handle.
func (f *fixture) createChild(t *testing.T, spec operator.ChildSpec) (string, string) {
	t.Helper()
	op, err := operator.Open(f.state, false)
	must(t, err)
	defer op.Close()
	cx, handle, err := op.CreateChild(context.Background(), f.cfg, spec, "tester", "a test child")
	must(t, err)
	return cx.ID, handle
}

// narrowChild creates a child context of parent bound to pools.
func (f *fixture) narrowChild(t *testing.T, parent string, pools ...string) (string, string) {
	t.Helper()
	return f.createChild(t, operator.ChildSpec{Parent: parent, Pools: pools})
}

// reconfigure rewrites the fixture's configuration with edit and reloads
// the runner and the server, as SIGHUP would.
func (w *web) reconfigure(t *testing.T, edit func(string) string) {
	t.Helper()
	path := filepath.Join(w.dir, "airlock.yaml")
	data, err := os.ReadFile(path)
	must(t, err)
	edited := edit(string(data))
	if edited == string(data) {
		t.Fatal("the edit changed nothing: the configuration moved")
	}
	must(t, os.WriteFile(path, []byte(edited), 0o644))
	cfg, err := config.Load(path)
	must(t, err)
	must(t, w.r.Reload(context.Background(), cfg, "test"))
	must(t, w.srv.Reload())
	w.cfg = cfg
}

// attempt is one way a credential reaches Airlock; run reads a file of
// beta and returns the code it got: the refusal of the handle, or the
// read's own (POOL_NOT_SELECTED in the test contexts).
type attempt struct {
	name string
	run  func(t *testing.T, w *web, bearer string, hdr map[string]string) string
}

// lastContext is the context of principal's latest read_pool_file record.
func (w *web) lastContext(t *testing.T, principal string) string {
	t.Helper()
	cx := ""
	for _, r := range w.toolRecords(t, "read_pool_file", string(violation.PoolNotSelected)) {
		if r.Principal == principal {
			cx = r.ContextID
		}
	}
	return cx
}

// readBeta reads a file of pool beta, which the test contexts under the
// principal's default leave out.
var readBeta = map[string]any{"pool": "beta", "path": "notes.md"}

// bearerHeaders is hdr with the Authorization header of bearer.
func bearerHeaders(bearer string, hdr map[string]string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + bearer}
	for k, v := range hdr {
		h[k] = v
	}
	return h
}

var attempts = []attempt{
	{"streamable HTTP session", func(t *testing.T, w *web, bearer string, hdr map[string]string) string {
		h := bearerHeaders(bearer, hdr)
		init := w.legacyInit(t, "", h)
		if init.status != http.StatusOK {
			return refusalCode(t, init, http.StatusForbidden)
		}
		h["Mcp-Session-Id"], h["Mcp-Protocol-Version"] = init.header.Get("Mcp-Session-Id"), "2025-11-25"
		res := w.send(t, http.MethodPost, "", h, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": callParams("read_pool_file", readBeta, nil)}).result(t)
		return code(res)
	}},
	{"SSE", func(t *testing.T, w *web, bearer string, hdr map[string]string) string {
		return code(sseCall(t, w.ts.URL, bearer, hdr, "read_pool_file", readBeta))
	}},
	{"sessionless 2026-07-28", func(t *testing.T, w *web, bearer string, hdr map[string]string) string {
		h := bearerHeaders(bearer, hdr)
		h["Mcp-Param-Pool"] = "beta" // the revision mirrors the pool argument in a header
		return code(w.modernCall(t, "", h, false, "read_pool_file", readBeta, nil).result(t))
	}},
}

// refusalCode is the violation code of a refused HTTP exchange.
func refusalCode(t *testing.T, r *httpReply, status int) string {
	t.Helper()
	if r.status != status || r.msg.Error == nil {
		t.Fatalf("HTTP %d, want %d with an error: %s", r.status, status, r.body)
	}
	c, _, _ := strings.Cut(r.msg.Error.Message, ":")
	return c
}

// TestBoundTokenCannotOptOut is the finding: with a child's handle, beta
// is POOL_NOT_SELECTED, but the same token without the header read beta
// from its default context. A token bound to the child (tokens[].context)
// runs in it without the header, may name it or a context under it, and
// is refused — 403 CONTEXT_OUTSIDE_BINDING, audited — for a sibling; a
// handle of another principal stays CONTEXT_INVALID. Over a streamable
// session, SSE and sessionless.
func TestBoundTokenCannotOptOut(t *testing.T) {
	w := webFixture(t)
	owner, tok := principalOf("agent-b"), tokenOf("agent-b")
	if res := call(t, w.legacyClient(t, "agent-b", nil), "read_pool_file", readBeta); res.IsError {
		t.Fatalf("unbound, the token reads beta from its default context: %s", text(res))
	}
	bound, boundHandle := w.narrowChild(t, defaultOf("agent-b"), "alpha")
	grand, grandHandle := w.narrowChild(t, bound, "alpha")
	_, siblingHandle := w.narrowChild(t, defaultOf("agent-b"), "alpha")
	call(t, w.legacyClient(t, "agent", nil), "list_pools", nil)
	_, foreignHandle := w.narrowChild(t, defaultOf("agent"), "alpha")
	w.reconfigure(t, func(s string) string {
		return strings.Replace(s, "tokens: [{env: AIRLOCK_TEST_TOKEN_B}]", "tokens: [{env: AIRLOCK_TEST_TOKEN_B, context: "+bound+"}]", 1)
	})

	cases := []struct {
		name, handle string
		code         violation.Code
		context      string
	}{
		{"no header", "", violation.PoolNotSelected, bound},
		{"the bound context", boundHandle, violation.PoolNotSelected, bound},
		{"a context under it", grandHandle, violation.PoolNotSelected, grand},
		{"a sibling", siblingHandle, violation.ContextOutsideBinding, ""},
		{"another principal's", foreignHandle, violation.ContextInvalid, ""},
	}
	for _, how := range attempts {
		for _, tc := range cases {
			t.Run(how.name+"/"+tc.name, func(t *testing.T) {
				hdr := map[string]string{}
				if tc.handle != "" {
					hdr[HeaderContext] = tc.handle
				}
				refusals := len(w.sessionRefusals(t, string(tc.code)))
				got := how.run(t, w, tok, hdr)
				if got != string(tc.code) {
					t.Fatalf("got %q, want %s", got, tc.code)
				}
				if tc.context != "" {
					if cx := w.lastContext(t, owner); cx != tc.context {
						t.Fatalf("ran in %s, want %s", cx, tc.context)
					}
				} else if n := len(w.sessionRefusals(t, string(tc.code))); n != refusals+1 {
					t.Fatalf("%d %s refusals audited, want %d", n, tc.code, refusals+1)
				}
			})
		}
	}
	for _, r := range w.toolRecords(t, "read_pool_file", "") {
		if r.Principal == owner && r.ContextID != defaultOf("agent-b") {
			t.Fatalf("beta was read outside the default context: %+v", r)
		}
	}
}

// TestRequireContext: a token with require_context never runs in its
// default context: without a handle it is 403 CONTEXT_REQUIRED (audited),
// and its default context still comes to exist, so that an operator can
// make it a child; with a child's handle it is served there.
func TestRequireContext(t *testing.T) {
	cfg := strings.Replace(fmt.Sprintf(testConfig, "local"), "tokens: [{env: AIRLOCK_TEST_TOKEN_B}]", "tokens: [{env: AIRLOCK_TEST_TOKEN_B, require_context: true}]", 1)
	w := webFixtureConfig(t, cfg)
	tok := tokenOf("agent-b")
	for _, how := range attempts {
		t.Run(how.name, func(t *testing.T) {
			before := len(w.sessionRefusals(t, string(violation.ContextRequired)))
			if got := how.run(t, w, tok, nil); got != string(violation.ContextRequired) {
				t.Fatalf("without a handle: %q, want CONTEXT_REQUIRED", got)
			}
			if n := len(w.sessionRefusals(t, string(violation.ContextRequired))); n != before+1 {
				t.Fatalf("%d CONTEXT_REQUIRED refusals audited, want %d", n, before+1)
			}
		})
	}
	cx, handle := w.narrowChild(t, defaultOf("agent-b"), "alpha")
	for _, how := range attempts {
		if got := how.run(t, w, tok, map[string]string{HeaderContext: handle}); got != string(violation.PoolNotSelected) {
			t.Fatalf("%s with a child's handle: %q, want the child's POOL_NOT_SELECTED", how.name, got)
		}
		if got := w.lastContext(t, principalOf("agent-b")); got != cx {
			t.Fatalf("%s ran in %s, want %s", how.name, got, cx)
		}
	}
}

// oauthWeb serves testConfig over HTTP with OAuth on a real provider on
// loopback and the given role_mapping rules.
func oauthWeb(t *testing.T, scopes, roleMapping string) (*web, *testidp.IdP) {
	t.Helper()
	idp := startIdP(t)
	cfg := withHTTP(t, fmt.Sprintf(testConfig, "local"), `{oauth: {resource: "`+oauthResource+`", scopes_supported: [`+scopes+`],
      issuers: [{issuer: "`+idp.Issuer+`"}], role_mapping: [`+roleMapping+`]}}`)
	return webFixtureConfig(t, cfg), idp
}

// TestOAuthBindingHoldsOnEveryHandle: one OAuth subject through a rule
// that requires a context and through one that does not. The bound token
// cannot ride a session the unbound one opened in the default context
// (403 CONTEXT_REQUIRED), nor post to its SSE stream (404, SESSION_FOREIGN);
// with a child's handle it is served there, and the unbound token keeps
// its session.
func TestOAuthBindingHoldsOnEveryHandle(t *testing.T) {
	w, idp := oauthWeb(t, "airlock.read, airlock.bound",
		`{role: agent-b, scopes: [airlock.bound], require_context: true}, {role: agent-b, scopes: [airlock.read]}`)
	free, bound := idpToken(t, idp, "agent", "airlock.read"), idpToken(t, idp, "agent", "airlock.bound")

	init := w.legacyInit(t, "", bearerHeaders(free, nil))
	if init.status != http.StatusOK {
		t.Fatalf("the unbound token's initialize: HTTP %d %s", init.status, init.body)
	}
	sid := init.header.Get("Mcp-Session-Id")
	onSession := func(bearer string) *httpReply {
		return w.send(t, http.MethodPost, "", bearerHeaders(bearer, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}),
			map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": callParams("read_pool_file", readBeta, nil)})
	}
	if got := refusalCode(t, onSession(bound), http.StatusForbidden); got != string(violation.ContextRequired) {
		t.Fatalf("the bound token on the unbound one's session: %s", got)
	}
	if res := onSession(free).result(t); res.IsError {
		t.Fatalf("the unbound token on its own session: %s", text(res))
	}
	for _, how := range attempts {
		if got := how.run(t, w, bound, nil); got != string(violation.ContextRequired) {
			t.Fatalf("%s, bound token without a handle: %q", how.name, got)
		}
	}

	stream := openSSE(t, w.ts.URL, free)
	if status, body := postMessage(t, w.ts.URL, bound, stream.sid, strings.Replace(sseRead, "%s", "9", 1)); status != http.StatusNotFound {
		t.Fatalf("the bound token on the unbound one's SSE stream: HTTP %d %s", status, body)
	}

	var principal string
	for _, r := range w.sessionRefusals(t, string(violation.ContextRequired)) {
		principal = r.Principal
	}
	if !strings.Contains(principal, "|agent") {
		t.Fatalf("refusals name %q", principal)
	}
	_, handle := w.narrowChild(t, contexts.DefaultID(principal, "agent-b"), "alpha")
	for _, how := range attempts {
		if got := how.run(t, w, bound, map[string]string{HeaderContext: handle}); got != string(violation.PoolNotSelected) {
			t.Fatalf("%s, bound token with a child's handle: %q", how.name, got)
		}
	}
}

// TestOneSubjectTwoRoles is issue 26 item 11: one OAuth subject that two
// role_mapping rules map to two roles. Before, both roles shared one
// default context keyed by the principal, rebound to whichever role came
// last, so a phase an operator set for one role served the other. Now each
// role has its own default context; a session opened under one role is
// refused (403 CONTEXT_INVALID) to a token of the other.
func TestOneSubjectTwoRoles(t *testing.T) {
	w, idp := oauthWeb(t, "airlock.fetch, airlock.pipes",
		`{role: fetch-planner, scopes: [airlock.fetch]}, {role: planner, scopes: [airlock.pipes]}`)
	fetcher, piper := idpToken(t, idp, "agent", "airlock.fetch"), idpToken(t, idp, "agent", "airlock.pipes")
	list := func(bearer string) audit.Record {
		t.Helper()
		if res := w.modernCall(t, "", bearerHeaders(bearer, nil), false, "list_pools", nil, nil).result(t); res.IsError {
			t.Fatal(text(res))
		}
		recs := w.toolRecords(t, "list_pools", "")
		return recs[len(recs)-1]
	}

	first := list(fetcher)
	if first.Role != "fetch-planner" || first.Phase != contexts.PhasePlanning {
		t.Fatalf("first call: %+v", first)
	}
	op, err := operator.Open(w.state, false)
	must(t, err)
	_, err = op.SetPhase(context.Background(), first.ContextID, contexts.PhaseExecution, "tester", "fetch-planner's plan reviewed")
	op.Close()
	must(t, err)

	other := list(piper)
	if other.ContextID == first.ContextID || other.ContextID != contexts.DefaultID(first.Principal, "planner") || other.Phase != contexts.PhasePlanning {
		t.Fatalf("the other role ran in context %s (phase %s); the first role's is %s, put in execution", other.ContextID, other.Phase, first.ContextID)
	}
	if again := list(fetcher); again.ContextID != first.ContextID || again.Phase != contexts.PhaseExecution {
		t.Fatalf("the first role's context after the other role's call: %+v", again)
	}
	for _, r := range w.auditRecords(t) {
		if r.Capability == string(audit.KindContextRebind) {
			t.Fatalf("a default context was rebound between the roles: %+v", r)
		}
	}

	init := w.legacyInit(t, "", bearerHeaders(fetcher, nil))
	sid := init.header.Get("Mcp-Session-Id")
	reply := w.send(t, http.MethodPost, "", bearerHeaders(piper, map[string]string{"Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}),
		map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": callParams("list_pools", nil, nil)})
	if got := refusalCode(t, reply, http.StatusForbidden); got != string(violation.ContextInvalid) {
		t.Fatalf("the other role's token on the first role's session: %s", got)
	}
}
