package server

import (
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/edge/admission"
	"github.com/airlock-dev/airlock/internal/edge/wire"
	"github.com/airlock-dev/airlock/internal/execution/catalog"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// Quick calls are bounded (transports.http.max_reads_in_flight, package
// admission): a streamable HTTP request that runs one waits for a slot
// before the session gate loads anything for it, so a thousand sessions
// calling at once hold a thousand small waits at the edge, not a thousand
// calls deep in the runner each holding its grown stack and its response
// until its audit record is durable (issue 27; BENCHMARKS.md "the calls in
// flight bounded").
//
// What is quick: every tools/call except the tools whose tier may take
// seconds (external: declare_need reaching an upstream or the web; act:
// run_pipeline), every resources/read (a pool file, read through the
// runner) and completion/complete (an audited list_pools). A slow call
// takes no slot, so however many are running, a quick call is never
// queued behind them (TestSlowCallsNeverHoldQuickOnesBack). A tool name
// this process does not declare is quick: mcp-go refuses it and the runner
// audits it, briefly. The slot is given back as soon as the runner has
// answered (forward), before mcp-go writes the response or asks a legacy
// client's person a question, and in any case when the request ends.
//
// Waiting happens before the call's memo of the store's state is made
// (percall.With in checkSession), so a call that waited sees every change
// committed while it waited (its session closed, the kill switch tripped:
// TestQueuedCallRefusedByKillSwitch). A request whose client goes away
// while it waits leaves without running and holds no slot
// (TestQueuedCallLeavesWhenItsClientGoes); it reached nothing that audits,
// as a request dropped before the edge had read it would not.
//
// SSE's POST /message hands the call to mcp-go, which runs it on a
// goroutine of its own after answering 202: it is not bounded here (a
// known limit, SECURITY.md). stdio serves one call at a time.

// quickMethods are the non-tool methods that run a quick governed call.
var quickMethods = map[string]bool{
	string(mcp.MethodResourcesRead):      true,
	string(mcp.MethodCompletionComplete): true,
}

// isQuick reports whether msg runs a quick governed call.
func (s *Server) isQuick(msg *wire.Message) bool {
	if msg == nil {
		return false
	}
	if msg.Method == string(mcp.MethodToolsCall) {
		slow := s.slowTools.Load()
		return slow == nil || !(*slow)[msg.Name]
	}
	return quickMethods[msg.Method]
}

// setSlowTools records which of tools may take seconds (registerTools,
// on every reload).
func (s *Server) setSlowTools(tools []catalog.ToolInfo) {
	slow := make(map[string]bool, len(tools))
	for _, t := range tools {
		if t.Tier == toolkit.TierExternal || t.Tier == toolkit.TierAct {
			slow[t.Name] = true
		}
	}
	s.slowTools.Store(&slow)
}

// serveAdmitted serves a quick call once it holds a slot. A call that
// found a slot free, or a queue no longer than the gate's limit, runs on
// the connection's goroutine, as any request does. A call that found more
// callers queued than the gate runs at once (a server taking far more
// calls than it runs: a thousand sessions calling) runs on a goroutine of
// its own: the connection's goroutine waited for the slot and now waits
// for that goroutine, never deeper than this frame, so the connections
// queued behind the gate keep small stacks (a call's frames — mcp-go's,
// the runner's, SQLite's — grow a stack to 32 KiB, which a goroutine
// keeps until the GC shrinks it, and the GC's goal counts stacks again).
// The own goroutine's stack growth costs a call 5–15% of its CPU, which
// a server with a short queue need not pay: its connections' stacks are
// few. The calls' goroutines are at most the gate's limit. A panic in one
// is re-raised here, where net/http recovers it as it would have.
func (s *Server) serveAdmitted(w http.ResponseWriter, r *http.Request, msg *wire.Message, next http.Handler) {
	slot, err := s.admission.Acquire(r.Context())
	if err != nil {
		s.log.Debug("a queued call left before it ran", "err", err)
		admissionGone(w, msg)
		return
	}
	defer slot.Release()
	r = r.WithContext(admission.With(r.Context(), slot))
	if slot.Queued() <= int64(s.admission.Limit()) {
		next.ServeHTTP(w, r)
		return
	}
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		next.ServeHTTP(w, r)
	}()
	if p := <-done; p != nil {
		panic(p)
	}
}

// admissionGone answers a request whose context ended while it waited for
// a slot. Its client has usually gone; the answer is for the rest.
func admissionGone(w http.ResponseWriter, msg *wire.Message) {
	writeRefusal(w, http.StatusServiceUnavailable, mcp.INTERNAL_ERROR, msg.ID,
		"the request ended while it waited to run; it did not run", string(violation.Unavailable))
}

// registerAdmissionMetrics exports the gate's occupancy on /metrics.
func (s *Server) registerAdmissionMetrics() {
	g := s.admission
	s.metrics.GaugeFunc("airlock_http_quick_calls_in_flight", "Quick governed calls (reads) running over streamable HTTP in this process; at most transports.http.max_reads_in_flight.",
		func() float64 { return float64(g.InFlight()) })
	s.metrics.GaugeFunc("airlock_http_quick_calls_waiting", "Quick governed calls (reads) waiting at the edge for one of transports.http.max_reads_in_flight slots.",
		func() float64 { return float64(g.Waiting()) })
}
