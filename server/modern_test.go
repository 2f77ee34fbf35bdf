package server

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// Both protocol revisions through the mcp-go client on one server: the
// session-oriented 2025-11-25 and the sessionless 2026-07-28; one
// principal's calls on either run in one context.

func TestBothProtocolRevisions(t *testing.T) {
	w := webFixture(t)
	clients := []struct {
		version string
		c       *client.Client
	}{
		{mcp.LATEST_LEGACY_PROTOCOL_VERSION, w.legacyClient(t, "agent", nil)},
		{modernVersion, w.modernClient(t, "agent", nil)},
	}
	for _, tc := range clients {
		t.Run(tc.version, func(t *testing.T) {
			hasSession := tc.c.GetSessionId() != ""
			if hasSession != (tc.version != modernVersion) {
				t.Fatalf("session id %q on %s", tc.c.GetSessionId(), tc.version)
			}
			tools, err := tc.c.ListTools(context.Background(), mcp.ListToolsRequest{})
			must(t, err)
			if !slices.ContainsFunc(tools.Tools, func(tl mcp.Tool) bool { return tl.Name == "read_pool_file" }) {
				t.Fatalf("tools/list: %+v", tools.Tools)
			}
			res := call(t, tc.c, "read_pool_file", map[string]any{"pool": "alpha", "path": "hello.txt"})
			if res.IsError || text(res) != "hello, pool\n" {
				t.Fatalf("read_pool_file: %s", text(res))
			}
			wantCode(t, call(t, tc.c, "read_pool_file", map[string]any{"pool": "beta", "path": "notes.md"}), "POOL_NOT_SELECTED")
		})
	}
	want := defaultOf("agent")
	sessions := map[string]bool{}
	for _, r := range w.toolRecords(t, "read_pool_file", "") {
		if r.ContextID != want || r.Principal != principalOf("agent") || r.Transport != transportStreamable {
			t.Fatalf("read in context %q: %+v", r.ContextID, r)
		}
		sessions[r.SessionID] = true
	}
	if !sessions[clients[0].c.GetSessionId()] || !sessions["sessionless"] || len(sessions) != 2 {
		t.Fatalf("sessions of the reads: %v", sessions)
	}
}

// TestModernRequestsIgnoreSessions: a 2026-07-28 request carries no
// session; one that sends someone else's Mcp-Session-Id anyway still runs
// as its own principal, in its own context.
func TestModernRequestsIgnoreSessions(t *testing.T) {
	w := webFixture(t)
	sidA := w.legacyClient(t, "agent", nil).GetSessionId()
	res := w.modernCall(t, "agent-b", map[string]string{"Mcp-Session-Id": sidA}, false, "list_pools", nil, nil).result(t)
	if res.IsError || !strings.Contains(text(res), "beta") {
		t.Fatalf("agent-b binds alpha and beta: %s", text(res))
	}
	recs := w.toolRecords(t, "list_pools", "")
	last := recs[len(recs)-1]
	if last.Principal != principalOf("agent-b") || last.ContextID != defaultOf("agent-b") || last.SessionID != "sessionless" {
		t.Fatalf("attribution: %+v", last)
	}
}
