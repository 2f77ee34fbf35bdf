package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// sseClient is an initialized mcp-go SSE client authenticated as role.
func sseClient(t *testing.T, url, role string) *client.Client {
	t.Helper()
	c := sseBearerClient(t, url, tokenOf(role))
	t.Cleanup(func() { c.Close() })
	return c
}

// sseStream is a raw SSE stream as a client holds it: the session id from
// the endpoint event, and every later event's data.
type sseStream struct {
	sid    string
	events chan string
}

// openSSE opens GET /sse with a bearer token and reads its events until
// the test ends.
func openSSE(t *testing.T, url, bearer string) *sseStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+PathSSE, nil)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+bearer)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /sse: HTTP %d", resp.StatusCode)
	}
	s := &sseStream{events: make(chan string, 64)}
	first := make(chan string, 1)
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event:"):
				event = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				data := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
				if event == "endpoint" {
					first <- data
				} else {
					s.events <- data
				}
			}
		}
	}()
	select {
	case endpoint := <-first:
		_, s.sid, _ = strings.Cut(endpoint, "sessionId=")
	case <-time.After(10 * time.Second): // a failure guard, not a verdict
		t.Fatal("no endpoint event on the SSE stream")
	}
	return s
}

// next is the id of the next JSON-RPC message on the stream and the
// message.
func (s *sseStream) next(t *testing.T) (string, map[string]any) {
	t.Helper()
	select {
	case data, ok := <-s.events:
		if !ok {
			t.Fatal("the SSE stream ended")
		}
		var m map[string]any
		must(t, json.Unmarshal([]byte(data), &m))
		id, _ := json.Marshal(m["id"])
		return string(id), m
	case <-time.After(10 * time.Second): // a failure guard, not a verdict
		t.Fatal("no message on the SSE stream")
	}
	return "", nil
}

// postMessage posts one JSON-RPC message to /message for session sid with
// a bearer token (and headers) and returns the status and body of the
// answer.
func postMessage(t *testing.T, url, bearer, sid, body string, headers ...map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+PathMessage+"?sessionId="+sid, strings.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+bearer)
	for _, h := range headers {
		for k, v := range h {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sseCall opens an SSE session with a bearer token, initializes it and
// makes one tools/call, every POST carrying hdr, and returns the call's
// result as it arrives on the stream.
func sseCall(t *testing.T, url, bearer string, hdr map[string]string, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	s := openSSE(t, url, bearer)
	call, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": callParams(tool, args, nil)})
	must(t, err)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"sse","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		string(call),
	} {
		if status, answer := postMessage(t, url, bearer, s.sid, body, hdr); status != http.StatusAccepted {
			t.Fatalf("POST /message: HTTP %d %s", status, answer)
		}
	}
	for {
		id, msg := s.next(t)
		if id != "2" {
			continue // initialize's answer
		}
		b, err := json.Marshal(msg["result"])
		must(t, err)
		var res mcp.CallToolResult
		must(t, json.Unmarshal(b, &res))
		return &res
	}
}

const sseRead = `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"read_pool_file","arguments":{"pool":"alpha","path":"hello.txt"}}}`

// TestSSESessionHijackBeforeFirstCall is issue 26 item 4: principal A
// posts a tool call to B's fresh SSE session before B's first call.
// Before the fix it ran as A, its answer landed on B's stream, and B was
// then refused SESSION_UNKNOWN. The session is bound when /sse opens: A's
// post is 404 at once — audited SESSION_FOREIGN, answered exactly like an
// id never issued — nothing of it reaches B's stream, and B's own calls
// are served.
func TestSSESessionHijackBeforeFirstCall(t *testing.T) {
	w := webFixture(t)
	b := openSSE(t, w.ts.URL, tokenOf("agent-b"))

	status, body := postMessage(t, w.ts.URL, tokenOf("agent"), b.sid, strings.Replace(sseRead, "%s", "99", 1))
	unknownStatus, unknownBody := postMessage(t, w.ts.URL, tokenOf("agent"), "sse-"+strings.Repeat("0", 36), strings.Replace(sseRead, "%s", "99", 1))
	if status != http.StatusNotFound || status != unknownStatus || body != unknownBody {
		t.Fatalf("A's post to B's session: HTTP %d %s; to an unknown id: HTTP %d %s", status, body, unknownStatus, unknownBody)
	}
	if !strings.Contains(body, string(violation.SessionUnknown)) {
		t.Fatalf("the refusal says %s", body)
	}
	a := principalOf("agent")
	if recs := w.sessionRefusals(t, string(violation.SessionForeign)); len(recs) != 1 || recs[0].Principal != a || recs[0].Transport != transportSSE {
		t.Fatalf("SESSION_FOREIGN records: %+v", recs)
	}

	// B's own session: the first answers on its stream are its own.
	for _, m := range []struct{ id, body string }{
		{"1", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`},
		{"", `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"2", strings.Replace(sseRead, "%s", "2", 1)},
	} {
		if status, body := postMessage(t, w.ts.URL, tokenOf("agent-b"), b.sid, m.body); status != http.StatusAccepted {
			t.Fatalf("B's own post: HTTP %d %s", status, body)
		}
		if m.id == "" {
			continue
		}
		id, msg := b.next(t)
		if id != m.id {
			t.Fatalf("B's stream carried message %s before its own answer %s: %v", id, m.id, msg)
		}
		if msg["error"] != nil {
			t.Fatalf("B's call %s: %v", id, msg["error"])
		}
		if res, _ := msg["result"].(map[string]any); m.id == "2" && res["isError"] == true {
			t.Fatalf("B's read: %v", res)
		}
	}
	for _, r := range w.toolRecords(t, "read_pool_file", "") {
		if r.Principal != principalOf("agent-b") {
			t.Fatalf("a read ran as %s through B's session: %+v", r.Principal, r)
		}
	}
	if n := len(w.toolRecords(t, "read_pool_file", "")); n != 1 {
		t.Fatalf("%d reads recorded, want B's one", n)
	}
}

// TestSSEOwnerTellsCredentialsApart: one principal's credentials that map
// to another role or another context binding do not share an SSE session.
func TestSSEOwnerTellsCredentialsApart(t *testing.T) {
	base := identity{Principal: "issuer|alice", Role: "agent"}
	otherRole, bound, required := base, base, base
	otherRole.Role = "admin"
	bound.Binding = contexts.Binding{Context: "ctx_0123456789abcdef01234567"}
	required.Binding = contexts.Binding{Required: true}
	seen := map[string]string{}
	for name, id := range map[string]identity{"base": base, "other role": otherRole, "bound": bound, "required": required} {
		if prev, dup := seen[sseOwner(id)]; dup {
			t.Errorf("%s and %s share an SSE owner", prev, name)
		}
		seen[sseOwner(id)] = name
	}
	same := base
	same.ClientID, same.ContextHandle = "another-client", "ctxh_x"
	if sseOwner(same) != sseOwner(base) {
		t.Error("the same principal, role and binding over another client is another owner")
	}
}

// TestSSEBindingReleasedWithItsStream: a stream's binding lives exactly
// as long as the GET /sse that opened it, so bindings cost no more memory
// than the open streams (which the connection bounds cap).
func TestSSEBindingReleasedWithItsStream(t *testing.T) {
	f := newFixture(t, "local")
	var minted string
	open := f.srv.sseStream(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sid, err := f.srv.mintSSESession(r.Context(), r)
		must(t, err)
		minted = sid
		if owner, ok := f.srv.sseOwners.Owner(sid); !ok || owner != sseOwner(identity{Principal: "p", Role: "agent"}) {
			t.Errorf("while the stream is open: owner %q, %v", owner, ok)
		}
	}))
	req := httptest.NewRequest(http.MethodGet, PathSSE, nil)
	open.ServeHTTP(httptest.NewRecorder(), req.WithContext(withIdentity(req.Context(), identity{Principal: "p", Role: "agent"})))
	if minted == "" || f.srv.sseOwners.Len() != 0 {
		t.Fatalf("after the stream ended: minted %q, %d bindings left", minted, f.srv.sseOwners.Len())
	}
	// Without the guard's identity no session is minted at all.
	if _, err := f.srv.mintSSESession(context.Background(), req); !errors.Is(err, errNoIdentity) {
		t.Fatalf("minting without an identity: %v", err)
	}
}
