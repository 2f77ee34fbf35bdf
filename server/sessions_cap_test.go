package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/airlock-dev/airlock/declarations/declarationstest"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/testkit/mcptest"
)

// The session cap (issue 26 item 3): a principal's sessions that are never
// closed — a crashed client, mcp-go's own client whose closing DELETE
// carries no token, the TypeScript SDK's close() that sends none — must
// not lock it out; one that opens sessions without end must still hold no
// more than the cap, in the store and in this process's memory.

// webClock is webFixtureHTTP served by a runner on clk, a clock the test
// moves: which session was used least recently is then the test's to say,
// not the scheduler's.
func webClock(t *testing.T, httpSettings string, clk *declarationstest.Clock) *web {
	t.Helper()
	w := webFixtureHTTP(t, httpSettings)
	g := w.withRunner(t, runner.Options{Now: clk.Now}, nil)
	w2 := &web{fixture: g, ts: httptest.NewServer(g.srv.Handler())}
	t.Cleanup(w2.ts.Close)
	return w2
}

// liveInMCPGo reports whether mcp-go still holds a session with this id.
func (f *fixture) liveInMCPGo(id string) bool {
	err := f.srv.mcp.SendLogMessageToSpecificClient(id, mcp.LoggingMessageNotification{})
	return !errors.Is(err, mcpserver.ErrSessionNotFound)
}

// TestSessionCapEvictsLeastRecentlyUsed: at max_sessions_per_principal a
// new initialize succeeds and closes the principal's least recently used
// session — audited as session.evict naming the session that took its
// place, refused from then on as SESSION_EXPIRED, its mcp-go state gone —
// while its other sessions and other principals' are untouched.
func TestSessionCapEvictsLeastRecentlyUsed(t *testing.T) {
	clk := declarationstest.NewClock(time.Now().UTC())
	w := webClock(t, "max_sessions_per_principal: 2", clk)
	other := w.legacyClient(t, "agent-b", nil)
	c1 := w.legacyClient(t, "agent", nil)
	clk.Advance(10 * time.Second)
	c2 := w.legacyClient(t, "agent", nil)
	clk.Advance(10 * time.Second)
	if res := call(t, c1, "list_pools", nil); res.IsError { // c1 is used after c2 was opened
		t.Fatal(text(res))
	}
	clk.Advance(10 * time.Second)
	c3 := w.legacyClient(t, "agent", nil)

	me := principalOf("agent")
	w.wantRefusal(t, w.legacyCall(t, "agent", c2.GetSessionId(), "list_pools", nil), http.StatusNotFound, "SESSION_EXPIRED", me, 0)
	for name, c := range map[string]*client.Client{"c1": c1, "c3": c3, "another principal's": other} {
		if res := call(t, c, "list_pools", nil); res.IsError {
			t.Fatalf("%s session after the eviction: %s", name, text(res))
		}
	}
	var evicts []string
	for _, r := range w.auditRecords(t) {
		if r.Capability == "session.evict" {
			evicts = append(evicts, r.SessionID)
			if r.Principal != me || !strings.Contains(r.Reason, c3.GetSessionId()) || r.ContextID != defaultOf("agent") {
				t.Errorf("eviction record: %+v", r)
			}
		}
	}
	if strings.Join(evicts, ",") != c2.GetSessionId() {
		t.Fatalf("evicted %v, want only c2 (%s), the least recently used", evicts, c2.GetSessionId())
	}
	if w.liveInMCPGo(c2.GetSessionId()) || !w.liveInMCPGo(c1.GetSessionId()) || !w.liveInMCPGo(c3.GetSessionId()) {
		t.Fatalf("mcp-go state: evicted c2 held %v, c1 %v, c3 %v", w.liveInMCPGo(c2.GetSessionId()), w.liveInMCPGo(c1.GetSessionId()), w.liveInMCPGo(c3.GetSessionId()))
	}
}

// shortLivedClient is what a new user writes with mcp-go's client
// (v1.2.1): connect, call, Close. Its Close sends DELETE without the
// Authorization header it was given, so the server refuses it (401) and
// the session stays open until it idles out or is evicted.
func shortLivedClient(t *testing.T, url, role string) (sid string, err error) {
	t.Helper()
	tr, err := transport.NewStreamableHTTP(url+PathStreamable, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + tokenOf(role)}))
	if err != nil {
		return "", err
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	defer c.Close()
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		return "", err
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	req.Params.ClientInfo = mcp.Implementation{Name: "short-lived", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		return "", err
	}
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "list_pools"}})
	if err != nil {
		return "", err
	}
	if res.IsError {
		return "", errors.New(mcptest.Text(res))
	}
	return c.GetSessionId(), nil
}

// TestShortLivedClientsNeverLockedOut is the finding: 100 short-lived
// mcp-go clients in a row (connect → call → close), a restart half way,
// under the default cap of 16. Before the fix the 17th initialize was 429
// SESSION_LIMIT for the rest of the idle timeout (30 minutes), across
// restarts. Now every one is served; the principal never holds more than
// the cap, in the store or in mcp-go's memory; each eviction is audited;
// another principal's session opened first is untouched.
func TestShortLivedClientsNeverLockedOut(t *testing.T) {
	w := webFixture(t)
	other := w.legacyClient(t, "agent-b", nil)
	const clients = 100
	var ids []string
	for i := range clients {
		if i == clients/2 {
			w.restart(t)
		}
		sid, err := shortLivedClient(t, w.ts.URL, "agent")
		if err != nil {
			t.Fatalf("client %d of %d: %v", i+1, clients, err)
		}
		ids = append(ids, sid)
	}
	// other's session lives in the store: the restarted server serves it.
	if res := w.legacyCall(t, "agent-b", other.GetSessionId(), "list_pools", nil).result(t); res.IsError {
		t.Fatalf("another principal's session after the flood: %s", text(res))
	}

	op, err := operator.Open(w.state, true)
	must(t, err)
	open, err := op.Sessions(context.Background(), defaultOf("agent"))
	op.Close()
	must(t, err)
	if limit := config.DefaultMaxSessionsPerPrincipal; len(open) != limit {
		t.Errorf("%d sessions of the principal open after %d clients, want the cap, %d", len(open), clients, limit)
	}
	held := 0
	for _, id := range ids[clients/2:] { // this process's sessions
		if w.liveInMCPGo(id) {
			held++
		}
	}
	if held > config.DefaultMaxSessionsPerPrincipal {
		t.Errorf("mcp-go holds %d of this process's %d sessions, more than the cap of %d", held, clients/2, config.DefaultMaxSessionsPerPrincipal)
	}
	evicted, closed := 0, 0
	for _, r := range w.auditRecords(t) {
		switch r.Capability {
		case "session.evict":
			evicted++
		case "session.close":
			closed++
		}
	}
	if want := clients - config.DefaultMaxSessionsPerPrincipal; evicted != want || closed != 0 {
		t.Errorf("%d session.evict and %d session.close records, want %d and 0 (the clients' DELETEs carry no token)", evicted, closed, want)
	}
}

// TestUnauthenticatedDeleteClosesNothing: a DELETE is authenticated like
// every request. Without a token it is 401 and closes nothing, even naming
// a live session: a session id is not a credential (proxies and logs see
// it), and honouring it would let anyone who saw one end another
// principal's session, which a signed-in other principal cannot (404,
// TestSessionIsBoundToItsPrincipal). The cap's eviction, not the DELETE,
// is what frees a client that sends it (TestShortLivedClientsNeverLockedOut).
func TestUnauthenticatedDeleteClosesNothing(t *testing.T) {
	w := webFixture(t)
	c := w.legacyClient(t, "agent", nil)
	if r := w.deleteSession(t, "", c.GetSessionId()); r.status != http.StatusUnauthorized {
		t.Fatalf("DELETE without a token: HTTP %d: %s", r.status, r.body)
	}
	if res := call(t, c, "list_pools", nil); res.IsError {
		t.Fatalf("the session after an unauthenticated DELETE: %s", text(res))
	}
	for _, r := range w.auditRecords(t) {
		if r.Capability == "session.close" {
			t.Fatalf("an unauthenticated DELETE closed a session: %+v", r)
		}
	}
	if _, total := w.edgeRefusals(t, "UNAUTHENTICATED"); total != 1 {
		t.Fatalf("%d audited UNAUTHENTICATED refusals, want 1", total)
	}
}

// TestSessionCapCountsOneTransport: SSE sessions of a principal neither
// count against its streamable HTTP cap nor are evicted by it.
func TestSessionCapCountsOneTransport(t *testing.T) {
	w := webFixtureHTTP(t, "max_sessions_per_principal: 1")
	sse := sseClient(t, w.ts.URL, "agent")
	if res := call(t, sse, "list_pools", nil); res.IsError {
		t.Fatal(text(res))
	}
	w.legacyClient(t, "agent", nil)
	w.legacyClient(t, "agent", nil)
	if res := call(t, sse, "list_pools", nil); res.IsError {
		t.Fatalf("the SSE session after two streamable ones under a cap of 1: %s", text(res))
	}
	for _, r := range w.auditRecords(t) {
		if r.Capability == "session.evict" && r.Transport != transportStreamable {
			t.Fatalf("a %s session was evicted by the streamable cap: %+v", r.Transport, r)
		}
	}
}
