package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/edge/admission"
	"github.com/airlock-dev/airlock/internal/edge/wire"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// oneSlotFixture serves testConfig over streamable HTTP with
// max_reads_in_flight 1, and reports the gate's events on the channel.
func oneSlotFixture(t *testing.T) (*fixture, *httptest.Server, chan admission.Event) {
	t.Helper()
	t.Setenv("AIRLOCK_TEST_TOKEN", testToken)
	f := newFixtureConfig(t, withHTTP(t, fmt.Sprintf(testConfig, "local"), "max_reads_in_flight: 1"))
	events := make(chan admission.Event, 16)
	f.srv.admission.Observe(func(e admission.Event) { events <- e })
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	return f, ts, events
}

// holdSlot takes the gate's only slot, standing for a quick call in
// flight; the returned function gives it back.
func holdSlot(t *testing.T, f *fixture) func() {
	t.Helper()
	if f.srv.admission.Limit() != 1 {
		t.Fatalf("gate of %d slots, want 1", f.srv.admission.Limit())
	}
	slot, err := f.srv.admission.Acquire(context.Background())
	must(t, err)
	return slot.Release
}

func readCalls(t *testing.T, f *fixture) (n int) {
	for _, r := range f.auditRecords(t) {
		if r.Tool == "read_pool_file" {
			n++
		}
	}
	return n
}

var helloRead = map[string]any{"pool": "alpha", "path": "hello.txt"}

// TestQueuedCallRefusedByKillSwitch: a read over the bound waits at the
// edge, before its memo of the store's state is made, so the kill switch
// tripped while it waited refuses it when it runs. A stdio (in-process)
// call never waits for the HTTP gate.
func TestQueuedCallRefusedByKillSwitch(t *testing.T) {
	f, ts, events := oneSlotFixture(t)
	c := bearerClient(t, ts.URL, testToken)
	callOK(t, c, "read_pool_file", helloRead) // the session's state is loaded before the wait
	release := holdSlot(t, f)
	defer release()

	callOK(t, f.connect(t), "list_pools", nil) // stdio-like: not bounded by the HTTP gate

	got := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "read_pool_file", Arguments: helloRead}})
		if err != nil {
			t.Error(err)
		}
		got <- res
	}()
	if e := <-events; e != admission.Waits {
		t.Fatalf("event %v, want Waits", e)
	}
	op, err := operator.Open(f.state, false)
	must(t, err)
	defer op.Close()
	must(t, op.SetKillSwitch(context.Background(), true, "tester", "incident while calls wait"))
	release()
	if res := <-got; res == nil || code(res) != "KILL_SWITCH_ENGAGED" {
		t.Fatalf("the queued call ran past the kill switch: %v", res)
	}
}

// TestQueuedCallLeavesWhenItsClientGoes: a read whose client gives up
// while it waits leaves the queue without running — no audit record — and
// holds no slot: the next call runs once the slot in flight is back.
func TestQueuedCallLeavesWhenItsClientGoes(t *testing.T) {
	f, ts, events := oneSlotFixture(t)
	c := bearerClient(t, ts.URL, testToken)
	callOK(t, c, "read_pool_file", helloRead)
	before := readCalls(t, f)
	release := holdSlot(t, f)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "read_pool_file", Arguments: helloRead}})
		done <- err
	}()
	if e := <-events; e != admission.Waits {
		t.Fatalf("event %v, want Waits", e)
	}
	cancel()
	if e := <-events; e != admission.GaveUp {
		t.Fatalf("event %v, want GaveUp", e)
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Logf("the client's call ended with %v", err)
	}
	release()
	if g := f.srv.admission; g.InFlight() != 0 || g.Waiting() != 0 {
		t.Fatalf("after the client left: %d slots held, %d waiting", g.InFlight(), g.Waiting())
	}
	if n := readCalls(t, f); n != before {
		t.Fatalf("the call whose client left was recorded: %d reads, want %d", n, before)
	}
	callOK(t, bearerClient(t, ts.URL, testToken), "read_pool_file", helloRead)
	if g := f.srv.admission; g.InFlight() != 0 {
		t.Fatalf("a slot leaked: %d held after the calls ended", g.InFlight())
	}
}

// TestSlowCallsNeverHoldQuickOnesBack: with one slot for quick calls,
// three declare_need calls held inside an upstream take none of it, and a
// read_pool_file runs while they hold (head-of-line blocking would leave
// it waiting until they end). Each slow call is another principal's: an
// upstream serves one context's calls one at a time.
func TestSlowCallsNeverHoldQuickOnesBack(t *testing.T) {
	const slow = 3
	t.Setenv("AIRLOCK_TEST_TOKEN", testToken)
	cfg, u := upstreamConfig(t, "mcper", "")
	var roles strings.Builder
	for i := range slow {
		fmt.Fprintf(&roles, "  holder-%d: {policy: mcp, pools: [alpha], initial_phase: execution, tokens: [{env: AIRLOCK_TEST_TOKEN_HOLD%d}]}\n", i, i)
		t.Setenv(fmt.Sprintf("AIRLOCK_TEST_TOKEN_HOLD%d", i), fmt.Sprintf("%s-holder-%d", testToken, i))
	}
	cfg = strings.Replace(cfg, "roles:\n", "roles:\n"+roles.String(), 1)
	entered, free := make(chan struct{}, slow), make(chan struct{})
	u.mcp.AddTool(mcp.NewTool("hold", mcp.WithDescription("Answers when the test lets it.")), func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		entered <- struct{}{}
		select {
		case <-free:
		case <-ctx.Done():
		}
		return mcp.NewToolResultText("held"), nil
	})
	f := newFixtureConfig(t, withHTTP(t, cfg, "max_reads_in_flight: 1"))
	must(t, f.approveTool(t, "hold", f.review(t)["hold"].SeenDigest))
	waits := make(chan admission.Event, slow)
	f.srv.admission.Observe(func(e admission.Event) { waits <- e })
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)

	results := make(chan *mcp.CallToolResult, slow)
	for i := range slow {
		c := bearerClient(t, ts.URL, fmt.Sprintf("%s-holder-%d", testToken, i))
		go func(c *client.Client) {
			res, err := c.CallTool(context.Background(), mcp.CallToolRequest{Params: mcp.CallToolParams{Name: "declare_need", Arguments: mcpNeed("hold", nil)}})
			if err != nil {
				t.Error(err)
			}
			results <- res
		}(c)
	}
	for range slow { // every slow call is inside the upstream
		select {
		case <-entered:
		case res := <-results:
			t.Fatalf("a slow call ended before it was let go: %v", res)
		case <-waits:
			t.Fatal("a slow call waits for a quick call's slot")
		}
	}
	if g := f.srv.admission; g.InFlight() != 0 {
		t.Fatalf("slow calls hold %d of the quick calls' slots", g.InFlight())
	}
	if res := callOK(t, bearerClient(t, ts.URL, testToken), "read_pool_file", helloRead); text(res) != "hello, pool\n" {
		t.Fatalf("read while slow calls hold: %s", text(res))
	}
	close(free)
	for range slow {
		if res := <-results; res == nil || res.IsError {
			t.Fatalf("a slow call: %v", res)
		}
	}
}

// TestAdmittedPanicReachesNetHTTP: a quick call that found a slot free,
// or a short queue, runs on the request's goroutine; one that found more
// callers queued than the gate's slots runs on a goroutine of its own, and
// a panic there is re-raised on the request's goroutine, where net/http
// recovers it, instead of ending the process. Either way the slot comes
// back. With one slot held, the second of two waiters found two queued.
func TestAdmittedPanicReachesNetHTTP(t *testing.T) {
	f, _, events := oneSlotFixture(t)
	msg := &wire.Message{Method: string(mcp.MethodToolsCall), Name: "read_pool_file"}
	boom := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") })
	serve := func() (p any) {
		defer func() { p = recover() }()
		f.srv.serveAdmitted(httptest.NewRecorder(), httptest.NewRequest("POST", PathStreamable, nil), msg, boom)
		return nil
	}
	if p := serve(); p != "boom" {
		t.Fatalf("a slot free: recovered %v, want the handler's panic", p)
	}
	release := holdSlot(t, f)
	got := make(chan any, 2)
	for range 2 {
		go func() { got <- serve() }()
		if e := <-events; e != admission.Waits {
			t.Fatalf("event %v, want Waits", e)
		}
	}
	release()
	for range 2 {
		if p := <-got; p != "boom" {
			t.Fatalf("after a wait: recovered %v, want the handler's panic", p)
		}
	}
	if g := f.srv.admission; g.InFlight() != 0 {
		t.Fatalf("the panicking calls kept their slots: %d held", g.InFlight())
	}
}
