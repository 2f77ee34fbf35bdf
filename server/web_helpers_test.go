package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/internal/testkit/mcptest"
)

// Helpers for the HTTP context, session and approval tests: every HTTP role
// of testConfig with its token, raw legacy and 2026-07-28 requests, and
// audit lookups.

// tokenEnv is the variable each HTTP role's token comes from.
var tokenEnv = map[string]string{
	"agent":        "AIRLOCK_TEST_TOKEN",
	"agent-b":      "AIRLOCK_TEST_TOKEN_B",
	"web-client":   "AIRLOCK_TEST_TOKEN_WEB",
	"web-operator": "AIRLOCK_TEST_TOKEN_WEBOP",
	"metered":      "AIRLOCK_TEST_TOKEN_METERED",
}

func tokenOf(role string) string {
	if role == "agent" {
		return testToken
	}
	return "test-token-" + role + "-0123456789"
}

// principalOf is the principal a role's token authenticates as.
func principalOf(role string) string { return role + "/env:" + tokenEnv[role] }

// modernVersion is the sessionless protocol revision.
const modernVersion = mcp.LATEST_PROTOCOL_VERSION

// web is a fixture served over a real HTTP server with every role's token set.
type web struct {
	*fixture
	ts *httptest.Server
}

func setTokens(t *testing.T) {
	t.Helper()
	for role, env := range tokenEnv {
		t.Setenv(env, tokenOf(role))
	}
}

// webFixture serves testConfig (stdio role local) over HTTP.
func webFixture(t *testing.T) *web {
	t.Helper()
	return webFixtureConfig(t, fmt.Sprintf(testConfig, "local"))
}

// webFixtureHTTP serves testConfig with a transports.http block.
func webFixtureHTTP(t *testing.T, httpSettings string) *web {
	t.Helper()
	cfg := withHTTP(t, fmt.Sprintf(testConfig, "local"), httpSettings)
	if !strings.Contains(cfg, httpSettings) {
		t.Fatal("the transports block of testConfig moved")
	}
	return webFixtureConfig(t, cfg)
}

func webFixtureConfig(t *testing.T, cfg string) *web {
	t.Helper()
	setTokens(t)
	w := &web{fixture: newFixtureConfig(t, cfg)}
	w.ts = httptest.NewServer(w.srv.Handler())
	t.Cleanup(w.ts.Close)
	return w
}

// second is another runner and server on the same state directory — a
// second process on the same store — with its own HTTP server.
func (w *web) second(t *testing.T) *web {
	t.Helper()
	r, err := runner.New(w.cfg, w.state, &runner.Options{SandboxTrampoline: trampoline})
	must(t, err)
	t.Cleanup(func() { r.Close() })
	srv, err := New(r, nil)
	must(t, err)
	f := *w.fixture
	f.r, f.srv = r, srv
	w2 := &web{fixture: &f, ts: httptest.NewServer(srv.Handler())}
	t.Cleanup(w2.ts.Close)
	return w2
}

// restart stops w's HTTP server and runner and starts new ones on the
// same configuration and state directory, in place.
func (w *web) restart(t *testing.T) {
	t.Helper()
	w.ts.Close()
	must(t, w.r.Close())
	var err error
	// newFixtureConfig's cleanup closes whatever runner w.r is then.
	w.r, err = runner.New(w.cfg, w.state, &runner.Options{SandboxTrampoline: trampoline})
	must(t, err)
	w.srv, err = New(w.r, nil)
	must(t, err)
	w.ts = httptest.NewServer(w.srv.Handler())
	t.Cleanup(w.ts.Close)
}

// legacyClient is an mcp-go streamable HTTP client on 2025-11-25 (one
// server-issued session) authenticated as role.
func (w *web) legacyClient(t *testing.T, role string, headers map[string]string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	return w.mcpClient(t, role, headers, mcp.LATEST_LEGACY_PROTOCOL_VERSION, opts...)
}

// modernClient is an mcp-go streamable HTTP client on 2026-07-28 (no session).
func (w *web) modernClient(t *testing.T, role string, headers map[string]string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	return w.mcpClient(t, role, headers, modernVersion, opts...)
}

func (w *web) mcpClient(t *testing.T, role string, headers map[string]string, version string, opts ...client.ClientOption) *client.Client {
	t.Helper()
	h := map[string]string{"Authorization": "Bearer " + tokenOf(role)}
	for k, v := range headers {
		h[k] = v
	}
	tr, err := transport.NewStreamableHTTP(w.ts.URL+PathStreamable, transport.WithHTTPHeaders(h))
	must(t, err)
	c := client.NewClient(tr, append([]client.ClientOption{client.WithProtocolVersion(version)}, opts...)...)
	must(t, c.Start(context.Background()))
	t.Cleanup(func() { c.Close() })
	if res := mcptest.Initialize(t, context.Background(), c, "airlock-web-test", version); res.ProtocolVersion != version {
		t.Fatalf("negotiated %s, want %s", res.ProtocolVersion, version)
	}
	return c
}

// rawCall sends one tools/call through c's transport exactly as given:
// unlike Client.CallTool it can carry inputResponses and requestState in
// the first round, as a forging client would.
func rawCall(t *testing.T, c *client.Client, params map[string]any) *mcp.CallToolResult {
	t.Helper()
	resp, err := c.GetTransport().SendRequest(context.Background(), transport.JSONRPCRequest{
		JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(9000)), Method: string(mcp.MethodToolsCall), Params: params,
	})
	must(t, err)
	if resp.Error != nil {
		t.Fatalf("tools/call: %v", resp.Error.AsError())
	}
	res, err := mcp.ParseCallToolResult(&resp.Result)
	must(t, err)
	return res
}

// approveAnswer is the person's "yes" to the approval question.
func approveAnswer() mcp.InputResponses {
	return mcp.InputResponses{"approve": mcp.NewElicitationInputResponse(mcp.ElicitationResult{
		ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": "approve"}},
	})}
}

// callParams builds tools/call params: name, arguments and extra fields
// (requestState, inputResponses, _meta).
func callParams(tool string, args map[string]any, extra map[string]any) map[string]any {
	p := map[string]any{"name": tool, "arguments": args}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// httpReply is one raw HTTP exchange.
type httpReply struct {
	status int
	header http.Header
	body   string
	msg    struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
}

// result decodes the reply's tools/call result.
func (h *httpReply) result(t *testing.T) *mcp.CallToolResult {
	t.Helper()
	if h.status != http.StatusOK || len(h.msg.Result) == 0 {
		t.Fatalf("no result: HTTP %d: %s", h.status, h.body)
	}
	res, err := mcp.ParseCallToolResult(&h.msg.Result)
	must(t, err)
	return res
}

// send makes one raw request to /mcp as role (no Authorization if role is
// ""), with extra headers, and decodes a JSON or SSE reply.
func (w *web) send(t *testing.T, method, role string, headers map[string]string, body any) *httpReply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		must(t, err)
		rd = strings.NewReader(string(b))
	}
	auth := ""
	if role != "" {
		auth = "Bearer " + tokenOf(role)
	}
	req := mcpRequest(t, method, w.ts.URL, rd, auth)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, raw := roundTrip(t, req)
	out := &httpReply{status: resp.StatusCode, header: resp.Header, body: string(raw)}
	payload := raw
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		payload = nil
		sc := bufio.NewScanner(strings.NewReader(string(raw)))
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok && strings.Contains(d, `"id"`) {
				payload = []byte(d)
			}
		}
	}
	if len(payload) > 0 {
		_ = json.Unmarshal(payload, &out.msg)
	}
	return out
}

// legacyCall posts a 2025-11-25 tools/call naming session sid ("" = none).
func (w *web) legacyCall(t *testing.T, role, sid, tool string, args map[string]any) *httpReply {
	t.Helper()
	h := map[string]string{mcp.HeaderProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION}
	if sid != "" {
		h["Mcp-Session-Id"] = sid
	}
	return w.send(t, http.MethodPost, role, h, map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": callParams(tool, args, nil)})
}

// legacyInit posts a 2025-11-25 initialize with extra headers.
func (w *web) legacyInit(t *testing.T, role string, headers map[string]string) *httpReply {
	t.Helper()
	return w.send(t, http.MethodPost, role, headers, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"protocolVersion": mcp.LATEST_LEGACY_PROTOCOL_VERSION, "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "raw", "version": "1"}}})
}

// deleteSession sends DELETE for sid as role.
func (w *web) deleteSession(t *testing.T, role, sid string) *httpReply {
	t.Helper()
	return w.send(t, http.MethodDelete, role, map[string]string{"Mcp-Session-Id": sid,
		mcp.HeaderProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION}, nil)
}

// modernCall posts one hand-written 2026-07-28 tools/call as role: the
// protocol headers, the _meta envelope (with the elicitation capability if
// elicit), and extra params (requestState, inputResponses).
func (w *web) modernCall(t *testing.T, role string, headers map[string]string, elicit bool, tool string, args, extra map[string]any) *httpReply {
	t.Helper()
	caps := map[string]any{}
	if elicit {
		caps["elicitation"] = map[string]any{}
	}
	p := callParams(tool, args, extra)
	p["_meta"] = map[string]any{
		mcp.MetaKeyProtocolVersion:    modernVersion,
		mcp.MetaKeyClientCapabilities: caps,
		mcp.MetaKeyClientInfo:         map[string]any{"name": "raw-modern", "version": "1"},
	}
	h := map[string]string{mcp.HeaderProtocolVersion: modernVersion, "Mcp-Method": "tools/call", "Mcp-Name": tool}
	for k, v := range headers {
		h[k] = v
	}
	return w.send(t, http.MethodPost, role, h, map[string]any{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": p})
}

// sessionRefusals are the audited session refusals with code.
func (f *fixture) sessionRefusals(t *testing.T, code string) []audit.Record {
	t.Helper()
	var out []audit.Record
	for _, r := range f.auditRecords(t) {
		if r.Capability == "transport.session" && r.Violation == code {
			out = append(out, r)
		}
	}
	return out
}

// toolRecords are the final audit records of tool calls (not the
// "started" records of consequential ones) with the given violation code
// ("" = successful calls).
func (f *fixture) toolRecords(t *testing.T, tool, code string) []audit.Record {
	t.Helper()
	var out []audit.Record
	for _, r := range f.auditRecords(t) {
		if r.Tool == tool && r.Outcome != "started" && r.Violation == code {
			out = append(out, r)
		}
	}
	return out
}

// approvals lists the declarations in the store as `airlock approvals
// list` does: those waiting for a person's decision, or with all every one.
func (f *fixture) approvals(t *testing.T, all bool) []*operator.Declaration {
	t.Helper()
	return withOperator(t, f.state, true, func(op *operator.API) ([]*operator.Declaration, error) {
		return op.Approvals(context.Background(), all)
	})
}

// approved lists the declarations in the store that were ever approved.
func (f *fixture) approved(t *testing.T) []*operator.Declaration {
	t.Helper()
	var out []*operator.Declaration
	for _, d := range f.approvals(t, true) {
		for _, h := range d.History {
			if h.To == declarations.StateApproved {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// operatorApprove approves a declaration as an operator would.
func (f *fixture) operatorApprove(t *testing.T, id string) {
	t.Helper()
	op, err := operator.Open(f.state, false)
	must(t, err)
	defer op.Close()
	_, err = op.Approve(context.Background(), id, "tester", "reviewed")
	must(t, err)
}

// defaultOf is the default context of an HTTP role's token principal in
// that role.
func defaultOf(role string) string { return contexts.DefaultID(principalOf(role), role) }

// localDefault is the default context of stdio's principal "local" in the
// fixture's stdio role.
func (f *fixture) localDefault() string {
	return contexts.DefaultID("local", f.cfg.Transports.Stdio.Role)
}
