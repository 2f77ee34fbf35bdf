package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/config"
)

// Protocol 2026-07-28 details the conformance suite checks (issue 24 item
// 2), over raw HTTP on loopback: what a client of the new revision gets
// for the methods it removed.

// modernMeta is the _meta envelope of a 2026-07-28 request.
func modernMeta() map[string]any {
	return map[string]any{
		mcp.MetaKeyProtocolVersion:    modernVersion,
		mcp.MetaKeyClientCapabilities: map[string]any{},
		mcp.MetaKeyClientInfo:         map[string]any{"name": "raw-modern", "version": "1"},
	}
}

// modernRequest posts one hand-written 2026-07-28 request (method, params
// with the _meta envelope added) as role.
func (w *web) modernRequest(t *testing.T, role string, id int, method string, params map[string]any) *httpReply {
	t.Helper()
	p := map[string]any{"_meta": modernMeta()}
	for k, v := range params {
		p[k] = v
	}
	h := map[string]string{mcp.HeaderProtocolVersion: modernVersion, "Mcp-Method": method}
	return w.send(t, http.MethodPost, role, h, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
}

// TestRemovedMethodsAreNotFound: the methods 2026-07-28 removed, sent as
// that revision sends requests (params holding only _meta), are answered
// 404 with -32601 "method not found" and the request's id — not 400 with
// -32602 for the params they used to take ("level" is required), which the
// edge's message check answered before the MCP library could say the
// method is gone. The same methods under 2025-11-25 keep their checks.
func TestRemovedMethodsAreNotFound(t *testing.T) {
	w := webFixture(t)
	for i, method := range []string{"logging/setLevel", "resources/subscribe", "resources/unsubscribe", "initialize", "ping"} {
		t.Run(method, func(t *testing.T) {
			id := 500 + i
			rep := w.modernRequest(t, "agent", id, method, nil)
			if rep.status != http.StatusNotFound || rep.msg.Error == nil || rep.msg.Error.Code != mcp.METHOD_NOT_FOUND {
				t.Fatalf("HTTP %d, %s; want 404 and -32601", rep.status, rep.body)
			}
			if !strings.Contains(rep.body, fmt.Sprintf(`"id":%d`, id)) {
				t.Fatalf("the error does not carry the request's id %d: %s", id, rep.body)
			}
		})
	}
	t.Run("2025-11-25 keeps the params check", func(t *testing.T) {
		sid := w.legacyInit(t, "agent", nil).header.Get("Mcp-Session-Id")
		rep := w.send(t, http.MethodPost, "agent", map[string]string{"Mcp-Session-Id": sid, mcp.HeaderProtocolVersion: mcp.LATEST_LEGACY_PROTOCOL_VERSION},
			map[string]any{"jsonrpc": "2.0", "id": 9, "method": "logging/setLevel", "params": map[string]any{}})
		if rep.status != http.StatusBadRequest || rep.msg.Error == nil || rep.msg.Error.Code != mcp.INVALID_PARAMS {
			t.Fatalf("HTTP %d, %s; want 400 and -32602", rep.status, rep.body)
		}
	})
}

// listen opens a 2026-07-28 subscriptions/listen stream as role asking for
// filter, and returns its messages one by one as they arrive.
func (w *web) listen(t *testing.T, role string, filter map[string]any) <-chan map[string]any {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 77, "method": "subscriptions/listen",
		"params": map[string]any{"_meta": modernMeta(), "notifications": filter}})
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	req := mcpRequest(t, http.MethodPost, w.ts.URL, bytes.NewReader(body), "Bearer "+tokenOf(role)).WithContext(ctx)
	req.Header.Set(mcp.HeaderProtocolVersion, modernVersion)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("subscriptions/listen: HTTP %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	out := make(chan map[string]any, 16)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	go func() {
		defer close(done)
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			d, ok := strings.CutPrefix(sc.Text(), "data:")
			if !ok {
				continue
			}
			var msg map[string]any
			if json.Unmarshal([]byte(strings.TrimSpace(d)), &msg) == nil {
				out <- msg
			}
		}
	}()
	return out
}

// next is the stream's next message; the test fails (not hangs) if the
// stream ends or nothing comes before the test's deadline.
func next(t *testing.T, stream <-chan map[string]any) map[string]any {
	t.Helper()
	deadline, ok := t.Deadline()
	if !ok {
		deadline = time.Now().Add(time.Minute)
	}
	select {
	case msg, ok := <-stream:
		if !ok {
			t.Fatal("the listen stream ended")
		}
		return msg
	case <-time.After(time.Until(deadline) - time.Second):
		t.Fatal("nothing arrived on the listen stream")
	}
	return nil
}

// TestListenStreamGetsToolsListChanged: a 2026-07-28 client that listens
// for toolsListChanged is told, on its subscriptions/listen stream and
// tagged with the subscription's id, when its tool list changes (here: a
// configuration reload adds a pipeline, which re-declares run_pipeline).
func TestListenStreamGetsToolsListChanged(t *testing.T) {
	w := webFixture(t)
	tools := w.listen(t, "agent", map[string]any{"toolsListChanged": true})
	ack := next(t, tools)
	if ack["method"] != string(mcp.MethodNotificationSubscriptionsAcknowledged) {
		t.Fatalf("first message: %v", ack)
	}
	if n, _ := ack["params"].(map[string]any)["notifications"].(map[string]any); n["toolsListChanged"] != true {
		t.Fatalf("toolsListChanged not established: %v", ack)
	}
	reloadWithPipeline(t, w.fixture, "added_later")
	msg := next(t, tools)
	if msg["method"] != string(mcp.MethodNotificationToolsListChanged) {
		t.Fatalf("after the reload: %v", msg)
	}
	meta, _ := msg["params"].(map[string]any)["_meta"].(map[string]any)
	if fmt.Sprint(meta[mcp.MetaKeySubscriptionID]) != "77" {
		t.Fatalf("not tagged with the subscription id: %v", msg)
	}
}

// reloadWithPipeline adds a pipeline to f's configuration file and reloads
// the runner and the server, as serve does on a change.
func reloadWithPipeline(t *testing.T, f *fixture, name string) {
	t.Helper()
	path := filepath.Join(f.dir, "airlock.yaml")
	data, err := os.ReadFile(path)
	must(t, err)
	added := string(data) + "  - name: " + name + "\n    description: Added by a reload.\n    argv: [/bin/true]\n    outputs: [x.txt]\n"
	must(t, os.WriteFile(path, []byte(added), 0o644))
	cfg, err := config.Load(path)
	must(t, err)
	must(t, f.r.Reload(context.Background(), cfg, "test"))
	must(t, f.srv.Reload())
}

// TestToolSchemasArePortable (issue 24 item 12): no input or output schema
// a client lists spells a type as an array (["array","null"]): clients that
// map tool schemas onto a single-type dialect (the OpenAPI subset of some
// model providers) reject such a tool or drop the constraint, and the
// inspector flags each one. Nullable fields are anyOf branches of one type.
func TestToolSchemasArePortable(t *testing.T) {
	w := webFixture(t)
	for _, version := range []string{mcp.LATEST_LEGACY_PROTOCOL_VERSION, modernVersion} {
		// The raw result: mcp-go's Tool type keeps only part of an output
		// schema, and the point is what goes over the wire.
		result := json.RawMessage(w.modernRequest(t, "agent", 1, "tools/list", nil).msg.Result)
		if version != modernVersion {
			resp, err := w.mcpClient(t, "agent", nil, version).GetTransport().SendRequest(context.Background(),
				transport.JSONRPCRequest{JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1)), Method: string(mcp.MethodToolsList)})
			must(t, err)
			result = resp.Result
		}
		var list struct {
			Tools []map[string]any `json:"tools"`
		}
		must(t, json.Unmarshal(result, &list))
		if len(list.Tools) < 4 {
			t.Fatalf("%d tools: %s", len(list.Tools), result)
		}
		for _, tool := range list.Tools {
			if tool["outputSchema"] == nil {
				t.Fatalf("%s lists no output schema", tool["name"])
			}
			for _, kind := range []string{"inputSchema", "outputSchema"} {
				for _, path := range typeUnions(tool[kind], kind) {
					t.Errorf("%s: %s %s: `type` is an array", version, tool["name"], path)
				}
			}
		}
	}
}

// typeUnions are the paths under path where a schema's "type" is an array.
func typeUnions(node any, path string) []string {
	var out []string
	switch n := node.(type) {
	case map[string]any:
		if _, ok := n["type"].([]any); ok {
			out = append(out, path)
		}
		for k, v := range n {
			if k != "const" && k != "enum" && k != "default" && k != "examples" {
				out = append(out, typeUnions(v, path+"."+k)...)
			}
		}
	case []any:
		for i, v := range n {
			out = append(out, typeUnions(v, fmt.Sprintf("%s[%d]", path, i))...)
		}
	}
	return out
}

// TestIndexSaysWhereTheEndpointIs (issue 24 item 9): GET / says what this
// server is and where its MCP endpoint is; /mcp/ (a trailing slash), any
// unknown path and a POST to / answer 404 with the same pointers rather
// than a bare "404 page not found". The console is named only when one is
// configured; the text carries no version and no configuration value; a
// cross-site page is refused as at the probes.
func TestIndexSaysWhereTheEndpointIs(t *testing.T) {
	w := webFixture(t)
	fetch := func(base, method, path string, h map[string]string) (int, string) {
		req, err := http.NewRequest(method, base+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
		must(t, err)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, body := roundTrip(t, req)
		return resp.StatusCode, string(body)
	}
	cases := []struct {
		method, path string
		status       int
	}{
		{http.MethodGet, "/", http.StatusOK},
		{http.MethodGet, "/mcp/", http.StatusNotFound},
		{http.MethodGet, "/nothing/here", http.StatusNotFound},
		{http.MethodPost, "/", http.StatusNotFound},
		{http.MethodPost, "/mcp/", http.StatusNotFound},
	}
	for _, tc := range cases {
		status, body := fetch(w.ts.URL, tc.method, tc.path, nil)
		if status != tc.status || !strings.Contains(body, "MCP endpoint") || !strings.Contains(body, ": /mcp\n") || !strings.Contains(body, "Authorization: Bearer") {
			t.Errorf("%s %s: %d\n%s", tc.method, tc.path, status, body)
		}
		if strings.Contains(body, "/console") || strings.Contains(body, Version) || strings.Contains(body, w.dir) {
			t.Errorf("%s %s says more than it should:\n%s", tc.method, tc.path, body)
		}
	}
	if status, _ := fetch(w.ts.URL, http.MethodGet, "/", map[string]string{"Origin": "https://evil.example"}); status != http.StatusForbidden {
		t.Errorf("a cross-site GET /: %d", status)
	}
	console := webFixtureHTTP(t, "console_role: web-operator")
	if _, body := fetch(console.ts.URL, http.MethodGet, "/", nil); !strings.Contains(body, "console: /console/") {
		t.Errorf("the console is not named:\n%s", body)
	}
}
