package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
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
