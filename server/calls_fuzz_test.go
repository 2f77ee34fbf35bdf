package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/edge/wire"
	"github.com/airlock-dev/airlock/internal/kit/strictjson"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// documentedCodes are the refusal codes README.md's "Tools the agent
// sees" table lists: a tool call's error result must carry one of them.
var documentedCodes = map[string]bool{}

func init() {
	for _, c := range strings.Fields(`PATH_OUTSIDE_POOLS UNKNOWN_POOL_ID POOL_NOT_SELECTED
		INTEGRITY_FAILURE WRITE_ATTEMPT CREDENTIAL_EXPOSED NOT_FOUND UNAVAILABLE INVALID_ARGUMENTS
		UNKNOWN_TOOL POLICY_DENIED PROVENANCE_DENIED APPROVAL_REQUIRED NETWORK_ACCESS_ATTEMPT
		PHASE_BLOCKED LIMIT_EXCEEDED UPSTREAM_UNAVAILABLE UPSTREAM_TIMEOUT UPSTREAM_RESULT_TOO_LARGE
		UPSTREAM_DEFINITION_NOT_APPROVED UPSTREAM_DEFINITION_CHANGED UPSTREAM_ARGUMENTS_INVALID
		UPSTREAM_ERROR UPSTREAM_CREDENTIAL_UNAVAILABLE UPSTREAM_TOKEN_EXCHANGE_REFUSED
		APPROVAL_INVALID CONTEXT_INVALID CONTEXT_OUTSIDE_BINDING CONTEXT_REQUIRED
		KILL_SWITCH_ENGAGED AUDIT_UNAVAILABLE INTERNAL_ERROR PRECONDITION_FAILED CANCELLED`) {
		documentedCodes[c] = true
	}
}

// fuzzTools are the tools the fuzzer picks from; a selector past them
// takes the fuzzer's own name.
var fuzzTools = []string{"list_pools", "read_pool_file", "declare_need", "run_pipeline"}

// fuzzKeys are the argument names the tools declare (and a few they do
// not), so generated objects reach past "unknown field".
var fuzzKeys = []string{
	"pool", "path", "offset", "limit", "operation", "parameters", "url", "query", "source",
	"upstream", "tool", "arguments", "justification", "user_request", "missing_knowledge",
	"expected_use", "declaration_id", "pipeline", "params", "name", "port", "phase", "_meta",
	"api_token", "password", "PATH", "Pool",
}

// fuzzAtoms are hostile and realistic leaf values.
var fuzzAtoms = []any{
	"alpha", "beta", "gamma", "delta", "nope", "ALPHA", "ａｌｐｈａ", "alpha\x00", " alpha",
	"hello.txt", "data/rows.csv", "big.txt", "image.png", "tampered.txt", "inner-link.txt",
	"unlisted.txt", "escape.txt", "escape-dir/passwd", "notes.md", "rows.csv", ".env",
	"../secret/passwd", "../../../../etc/passwd", "/etc/passwd", "a//b", "a\\b", "./hello.txt",
	"hello.txt/", "data/../hello.txt", "%2e%2e/secret", "\u202ehello.txt", "hello\u200b.txt",
	"\ufeff", "\U0010ffff", "\xff\xfe", "",
	"http://user:pass@127.0.0.1/gated?token=secret&api_key=k", "http://127.0.0.1/doc",
	"https://example.com/", "file:///etc/passwd", "http://169.254.169.254/latest/meta-data/",
	"http://[::1]:1/", "gopher://127.0.0.1:25/", "javascript:alert(1)", "http://127.0.0.1:99999/",
	"comm.fetch", "comm.search", "comm.query", "comm.mcp", "pool.read",
	"count_rows", "greet", "cat_file", "danger_wipe", "where", "overwrite", "ann", "Ann",
	"decl_00000000", "planning", "execution",
	strings.Repeat("A", 5000), strings.Repeat("../", 400) + "etc/passwd",
	json.Number("0"), json.Number("-1"), json.Number("1.5"), json.Number("-0"),
	json.Number("1e309"), json.Number("-1e309"), json.Number("9007199254740993"),
	json.Number("123456789012345678901234567890123456789"), json.Number("1e-400"),
	json.Number("18446744073709551616"), json.Number("4096"), json.Number("1001"),
	true, false, nil,
}

// argGen builds a JSON value from fuzzer bytes: always valid JSON, so
// every input reaches the server (mutated JSON text mostly does not
// parse), with the shapes an agent could send.
type argGen struct {
	b []byte
	n int // values made, bounded so an input stays cheap
}

func (g *argGen) byte() byte {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return c
}

func (g *argGen) str() string {
	n := int(g.byte() % 24)
	if n > len(g.b) {
		n = len(g.b)
	}
	s := string(g.b[:n])
	g.b = g.b[n:]
	return s
}

func (g *argGen) value(depth int) any {
	g.n++
	if depth > 20 || g.n > 200 {
		return fuzzAtoms[int(g.byte())%len(fuzzAtoms)]
	}
	switch c := g.byte(); c % 9 {
	case 0, 1, 2:
		return fuzzAtoms[int(g.byte())%len(fuzzAtoms)]
	case 3:
		return g.str()
	case 4:
		return json.Number(fmt.Sprint(int64(g.byte())<<56 | int64(g.byte())<<8 | int64(g.byte()) - 1<<15))
	case 5:
		return g.object(depth + 1)
	case 6:
		arr := make([]any, int(g.byte()%4))
		for i := range arr {
			arr[i] = g.value(depth + 1)
		}
		return arr
	case 7: // deep nesting: up to 70 levels, past the wire's 64
		var v any = g.str()
		for range int(g.byte() % 70) {
			v = []any{v}
		}
		return v
	default: // an atom with fuzzer bytes around it
		a, _ := fuzzAtoms[int(g.byte())%len(fuzzAtoms)].(string)
		return g.str() + a + g.str()
	}
}

func (g *argGen) object(depth int) map[string]any {
	m := map[string]any{}
	for range int(g.byte() % 6) {
		k := fuzzKeys[int(g.byte())%len(fuzzKeys)]
		if g.byte()%8 == 0 {
			k = g.str()
		}
		m[k] = g.value(depth)
	}
	return m
}

// fuzzArgs turns the fuzzer's bytes into call arguments: the JSON they
// hold when they are JSON (numbers kept as written, any type, not only
// an object), else an object generated from them.
func fuzzArgs(raw []byte) any {
	if json.Valid(raw) {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var v any
		if d.Decode(&v) == nil {
			return v
		}
	}
	g := &argGen{b: raw}
	return g.object(0)
}

// leakMarkers are what an answer must never hold unless the agent sent
// it: host paths it was not given and the marks of a stack trace.
func leakMarkers(fx *fixture) []string {
	m := []string{fx.dir, fx.state, binDir, os.TempDir() + "/", "goroutine ", "panic", ".go:"}
	if wd, err := os.Getwd(); err == nil {
		m = append(m, wd)
	}
	return m
}

// leaked returns the first marker in answer that the input does not hold
// ("" if none): an error may echo the agent's own value, never more.
func leaked(markers []string, input, answer string) string {
	for _, m := range markers {
		if m != "" && strings.Contains(answer, m) && !strings.Contains(input, m) {
			return m
		}
	}
	return ""
}

// newRecords returns the audit records written after *last and moves
// *last past them.
func newRecords(t testing.TB, op *operator.API, last *int64) []audit.Record {
	t.Helper()
	var out []audit.Record
	must(t, op.Scan(context.Background(), *last, func(r *audit.Record) error {
		out = append(out, *r)
		*last = r.Seq
		return nil
	}))
	return out
}

// callTimeout bounds one call: generous (two shared cores, the race
// detector), since the property is "no hang", not speed.
const callTimeout = 20 * time.Second

// FuzzToolCall: any tool name (the four tools or the fuzzer's own) with
// any arguments (a JSON value of any type, or an object generated from
// the bytes: hostile paths and pool ids, huge, negative and float
// offsets, deep nesting, odd Unicode, URLs with credentials, unknown
// keys), sent by a real mcp-go client through the real server in
// planning (role fetch-planner: pools, declare_need's dry run,
// run_pipeline's schema and phase gate). For every call:
//   - it returns within callTimeout (a hang or a deadlock is caught);
//   - the answer is a success, a tool error result whose text is
//     "CODE: …" with a documented code other than INTERNAL_ERROR and
//     AUDIT_UNAVAILABLE, the same code in structuredContent.error.code,
//     or, for an unknown tool or a number past a float64 only, a
//     JSON-RPC error;
//   - structuredContent matches the tool's advertised output schema;
//   - no text of the answer holds the fixture's directories, the state
//     directory, the temporary directory, the working directory, or
//     "goroutine ", "panic", ".go:" unless the input held it (an error
//     echoing a host path or a stack trace is caught);
//   - the call left an audit record carrying its code (a refusal path
//     that skips the record is caught);
//   - the server keeps serving: list_pools succeeds after it.
func FuzzToolCall(f *testing.F) {
	cfg := strings.Replace(fmt.Sprintf(testConfig, "fetch-planner"), "per_minute: 4}", "per_minute: 1000000}", 1)
	fx := newFixtureConfig(f, cfg)
	c := fx.connect(f)
	op, err := operator.Open(fx.state, true)
	must(f, err)
	f.Cleanup(func() { op.Close() })
	var last int64
	newRecords(f, op, &last)
	markers := leakMarkers(fx)

	justification := `"justification":{"user_request":"What does the page say?","missing_knowledge":"The page's text.","expected_use":"Summarise it."}`
	for _, s := range []struct {
		tool uint8 // index into fuzzTools; past them, name is used
		name string
		args string
	}{
		{0, "", `{}`},
		{0, "", `{"pool":"alpha"}`},
		{0, "", `{"pool":"alpha","offset":1e308,"limit":-1}`},
		{0, "", `{"pool":"gamma","offset":1.5}`},
		{1, "", `{"pool":"alpha","path":"hello.txt"}`},
		{1, "", `{"pool":"alpha","path":"big.txt","offset":4096,"limit":100}`},
		{1, "", `{"pool":"alpha","path":"big.txt","offset":-1,"limit":123456789012345678901234567890}`},
		{1, "", `{"pool":"alpha","path":"../secret/passwd"}`},
		{1, "", `{"pool":"alpha","path":"escape.txt"}`},
		{1, "", `{"pool":"alpha","path":"escape-dir/passwd"}`},
		{1, "", `{"pool":"alpha","path":"tampered.txt"}`},
		{1, "", `{"pool":"alpha","path":"image.png","offset":2}`},
		{1, "", `{"pool":"beta","path":"notes.md"}`},
		{1, "", `{"pool":"delta","path":".env"}`},
		{1, "", `{"pool":"ａｌｐｈａ","path":"hello\u202e.txt"}`},
		{1, "", `{"pool":"alpha","path":"/etc/passwd","pool":"beta"}`},
		{1, "", `[1,2,3]`},
		{1, "", `"hello.txt"`},
		{1, "", `null`},
		{2, "", `{"operation":"comm.fetch","parameters":{"url":"http://127.0.0.1/doc"},` + justification + `}`},
		{2, "", `{"operation":"comm.fetch","parameters":{"url":"http://user:pass@127.0.0.1/gated/x?api_key=s3cr3t"},` + justification + `}`},
		{2, "", `{"operation":"comm.fetch","parameters":{"url":"http://169.254.169.254/latest/meta-data/"},` + justification + `}`},
		{2, "", `{"operation":"comm.search","parameters":{"query":"panic goroutine"},` + justification + `}`},
		{2, "", `{"operation":"comm.query","parameters":{"source":"db","query":"SELECT 1"},` + justification + `}`},
		{2, "", `{"operation":"comm.mcp","parameters":{"upstream":"nope","tool":"x","arguments":{"a":[[[[[[1]]]]]]}},` + justification + `}`},
		{2, "", `{"declaration_id":"decl_00000000"}`},
		{2, "", `{"declaration_id":"../../state/airlock.db","phase":"execution"}`},
		{3, "", `{"pipeline":"count_rows"}`},
		{3, "", `{"pipeline":"greet","params":{"name":"ann"}}`},
		{3, "", `{"pipeline":"cat_file","params":{"path":"/etc/shadow"}}`},
		{3, "", `{"pipeline":"phone_home","params":{"port":1e300}}`},
		{3, "", `{"pipeline":"nope"}`},
		{9, "delete_everything", `{}`},
		{9, "", `{}`},
		{9, "read_pool_file\x00", `{"pool":"alpha","path":"hello.txt"}`},
		{9, strings.Repeat("x", 300) + "\xff", `{}`},
		{1, "", "\x05\x01\x00\x01\x07\x02\x03\x01\x05\x41"}, // generated: not JSON
	} {
		f.Add(s.tool, s.name, []byte(s.args))
	}

	f.Fuzz(func(t *testing.T, sel uint8, name string, raw []byte) {
		tool := name
		if int(sel) < len(fuzzTools) {
			tool = fuzzTools[sel]
		}
		known := false
		for _, k := range fuzzTools {
			known = known || k == tool
		}
		args := fuzzArgs(raw)
		argText, err := json.Marshal(args)
		must(t, err)
		input := tool + "\x00" + string(argText) + "\x00" + string(raw)

		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name = tool
		req.Params.Arguments = args
		res, err := c.CallTool(ctx, req)
		if ctx.Err() != nil {
			t.Fatalf("%q %s: no answer within %s", tool, argText, callTimeout)
		}
		recs := newRecords(t, op, &last)
		var want string // the code the audit record must carry ("" = success)
		switch {
		case err != nil:
			if m := leaked(markers, input, err.Error()); m != "" {
				t.Errorf("%q %s: the JSON-RPC error holds %q: %v", tool, argText, m, err)
			}
			want = "UNKNOWN_TOOL"
			switch {
			case errors.Is(strictjson.Check(argText, wire.MaxDepth), strictjson.ErrNumberRange):
				// mcp-go cannot decode a number past a float64; over a
				// transport the edge refuses the message first
				// (FuzzRawMessage), in process mcp-go answers and the
				// runner audits the refusal (auditRefusedCall).
				if known {
					want = "INVALID_ARGUMENTS"
				}
			case known: // a refusal of a known tool is a tool result with a code
				t.Errorf("%q %s: a JSON-RPC error, not a tool result: %v", tool, argText, err)
				want = "INVALID_ARGUMENTS"
			}
		case res == nil:
			t.Fatalf("%q %s: neither a result nor an error", tool, argText)
		default:
			body, err := json.Marshal(res)
			must(t, err)
			if m := leaked(markers, input, text(res)+"\x00"+string(body)); m != "" {
				t.Errorf("%q %s: the answer holds %q:\n%s", tool, argText, m, body)
			}
			if !utf8.ValidString(text(res)) {
				t.Errorf("%q %s: the answer's text is not valid UTF-8", tool, argText)
			}
			if known {
				checkOutputSchema(t, tool, res)
			}
			if res.IsError {
				want = code(res)
				if !documentedCodes[want] {
					t.Fatalf("%q %s: an error result without a documented code: %s", tool, argText, text(res))
				}
				if want == "INTERNAL_ERROR" || want == "AUDIT_UNAVAILABLE" {
					t.Fatalf("%q %s: bad input is %s: %s", tool, argText, want, text(res))
				}
				var sc struct {
					Error struct {
						Code string `json:"code"`
					} `json:"error"`
				}
				if b, err := json.Marshal(res.StructuredContent); err != nil || json.Unmarshal(b, &sc) != nil || sc.Error.Code != want {
					t.Errorf("%q %s: structuredContent.error.code %q, text code %q", tool, argText, sc.Error.Code, want)
				}
			} else if !known {
				t.Fatalf("%q: an unknown tool succeeded: %s", tool, text(res))
			}
		}
		if len(recs) == 0 {
			t.Fatalf("%q %s: no audit record", tool, argText)
		}
		found := false
		for _, r := range recs {
			found = found || (want == "" && r.Violation == "") || (want != "" && r.Violation == want)
		}
		if !found {
			t.Errorf("%q %s: no audit record with violation %q among %d new", tool, argText, want, len(recs))
		}

		// The server keeps serving.
		alive, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "list_pools"}})
		if err != nil || alive.IsError {
			t.Fatalf("after %q %s the server stopped serving: %v %+v", tool, argText, err, alive)
		}
		newRecords(t, op, &last)
	})
}

// rawStatuses are the statuses README.md documents for a POST to /mcp by
// an authenticated client: an answer (200, 202 for a notification), a
// refused message (400, 413, 415), a session or method the server does
// not know (404), a method or Accept the endpoint does not take (405,
// 406). Never 500.
var rawStatuses = map[int]bool{200: true, 202: true, 400: true, 404: true, 405: true, 406: true, 413: true, 415: true}

// FuzzRawMessage: any bytes POSTed to the streamable HTTP endpoint
// (httptest over loopback, as the HTTP tests serve it) by an
// authenticated client, in an initialized 2025-11-25 session, with no
// session id, or as a sessionless 2026-07-28 request. For every body:
//   - the server answers within callTimeout with a documented status,
//     never a 5xx (a handler panic or an unmapped error is caught);
//   - the answer holds no host path (fixture, state, temporary or working
//     directory) and no "goroutine ", "panic" or ".go:" the body did not
//     hold (a stack trace or an internal path in an error is caught);
//   - a tools/call the wire check accepts and the server answers 200
//     leaves an audit record (a refusal between the edge and the runner
//     that skips the trail is caught);
//   - the server keeps serving: the session's list_pools still succeeds.
func FuzzRawMessage(f *testing.F) {
	f.Setenv(tokenEnv["agent"], testToken)
	fx := newFixture(f, "local")
	ts := httptest.NewServer(fx.srv.Handler())
	f.Cleanup(ts.Close)
	op, err := operator.Open(fx.state, true)
	must(f, err)
	f.Cleanup(func() { op.Close() })
	markers := leakMarkers(fx)

	post := func(t testing.TB, mode uint8, sid string, body []byte) (*http.Response, []byte) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		req := mcpRequest(t, http.MethodPost, ts.URL, bytes.NewReader(body), "Bearer "+testToken).WithContext(ctx)
		switch mode % 3 {
		case 0: // the initialized session
			req.Header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
			req.Header.Set("Mcp-Session-Id", sid)
		case 1: // no session
			req.Header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
		case 2: // sessionless 2026-07-28
			req.Header.Set(mcp.HeaderProtocolVersion, modernVersion)
			if p, err := wire.Check(body); err == nil {
				req.Header.Set("Mcp-Method", p.Method)
				if p.Name != "" {
					req.Header.Set("Mcp-Name", p.Name)
				}
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("no answer to %q: %v", body, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("reading the answer to %q: %v", body, err)
		}
		return resp, b
	}

	// One initialized 2025-11-25 session for mode 0.
	resp, b := post(f, 1, "", []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+
		mcp.LATEST_LEGACY_PROTOCOL_VERSION+`","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`))
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		f.Fatalf("initialize: HTTP %d, session %q: %s", resp.StatusCode, sid, b)
	}
	if resp, b := post(f, 0, sid, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); resp.StatusCode != http.StatusAccepted {
		f.Fatalf("notifications/initialized: HTTP %d: %s", resp.StatusCode, b)
	}
	alive := []byte(`{"jsonrpc":"2.0","id":"alive","method":"tools/call","params":{"name":"list_pools","arguments":{}}}`)
	var last int64
	newRecords(f, op, &last)

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + modernVersion +
		`","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"fuzz","version":"1"}}`
	for _, s := range []struct {
		mode uint8
		body string
	}{
		{0, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_pool_file","arguments":{"pool":"alpha","path":"hello.txt"}}}`},
		{0, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_pool_file","arguments":{"pool":"alpha","path":"escape.txt"}}}`},
		{0, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"list_pools","arguments":{"offset":-1e300}}}`},
		{0, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"nope","arguments":[]}}`},
		{0, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"list_pools","arguments":{"pool":"alpha","pool":"beta"}}}`},
		{0, `{"jsonrpc":"2.0","id":7,"method":"resources/read","params":{"uri":"airlock://pool/alpha/../secret/passwd"}}`},
		{0, `{"jsonrpc":"2.0","id":8,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"airlock://pool/{pool}/{path}"},"argument":{"name":"path","value":"../"}}}`},
		{0, `{"jsonrpc":"2.0","id":9,"method":"prompts/get","params":{"name":"airlock_run_pipeline","arguments":{"pipeline":"count_rows"}}}`},
		{0, `{"jsonrpc":"2.0","id":10,"method":"logging/setLevel","params":{"level":"debug"}}`},
		{0, `[{"jsonrpc":"2.0","id":11,"method":"ping"}]`},
		{0, `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`},
		{0, `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":1}}`},
		{0, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`},
		{0, `{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"declare_need","arguments":{"declaration_id":"x"}}}`},
		{0, `not json`},
		{1, `{"jsonrpc":"2.0","id":14,"method":"tools/list"}`},
		{2, `{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"list_pools","arguments":{},` + meta + `}}`},
		{2, `{"jsonrpc":"2.0","id":16,"method":"server/discover","params":{` + meta + `}}`},
		{2, `{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"read_pool_file","arguments":{"pool":"alpha","path":"/etc/passwd"},` + meta + `}}`},
	} {
		f.Add(s.mode, []byte(s.body))
	}

	f.Fuzz(func(t *testing.T, mode uint8, body []byte) {
		resp, answer := post(t, mode, sid, body)
		if !rawStatuses[resp.StatusCode] {
			t.Errorf("HTTP %d, not a documented status, for %q: %s", resp.StatusCode, body, answer)
		}
		if m := leaked(markers, string(body), string(answer)); m != "" {
			t.Errorf("the answer to %q holds %q: %s", body, m, answer)
		}
		recs := newRecords(t, op, &last)
		if p, err := wire.Check(body); err == nil && p.Method == "tools/call" && resp.StatusCode == http.StatusOK && len(recs) == 0 {
			t.Errorf("a tools/call answered 200 left no audit record: %q: %s", body, answer)
		}
		if resp, b := post(t, 0, sid, alive); resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"alpha"`)) {
			t.Fatalf("after %q the server stopped serving: HTTP %d: %s", body, resp.StatusCode, b)
		}
		newRecords(t, op, &last)
	})
}
