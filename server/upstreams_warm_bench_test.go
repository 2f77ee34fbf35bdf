package server

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/internal/testkit/mcptest"
)

// BenchmarkUpstreamWarm (issue 23, `make bench`): one upstream tool call
// through Airlock (declare_need comm.mcp from an in-process mcp-go client:
// every step of the runner, the pin check and the audit record's commit
// included) against the same server called directly with a long-lived
// mcp-go session, side by side, rounds interleaved; it prints the median
// per-call time of each side and their ratio (UPSTREAM lines). Targets:
// stdio ≤ 3×, HTTP ≤ 1.5×. The cold start — the first call of a new
// context: its sandbox, initialize and listing — is printed on its own.
func BenchmarkUpstreamWarm(b *testing.B) {
	b.Setenv("AIRLOCK_TEST_TOKEN_MCP", "bench-token-0123456789abcdef")
	w := newWarmSetup(b)
	f := w.f
	op, err := operator.Open(f.state, false)
	must(b, err)
	defer op.Close()
	if errs := op.RefreshUpstreams(context.Background(), f.cfg, "up", "bench"); len(errs) > 0 {
		b.Fatal(errs)
	}
	pins, err := op.UpstreamPins(context.Background(), "up")
	must(b, err)
	for _, p := range pins {
		if p.Tool == "echo" {
			_, err = op.ApproveUpstreamTool(context.Background(), "up", "echo", p.SeenDigest, "bench")
			must(b, err)
		}
	}
	// Each round runs in a new context (a child of the principal's
	// default), so its first call is a cold start and the provenance
	// every governed call traces (issue 22) is a round's, not the whole
	// run's; within it, calls on the warm sessions.
	const n, rounds = 50, 5
	get, echo := map[string]any{"key": "k"}, map[string]any{"message": "hi"}
	d, err := client.NewStdioMCPClient(w.bin, nil, "-tag=direct-"+w.tag)
	must(b, err)
	b.Cleanup(func() { d.Close() })
	mcptest.Connect(b, context.Background(), d, "bench")
	h, err := client.NewStreamableHttpClient(w.http.URL + "/mcp")
	must(b, err)
	b.Cleanup(func() { h.Close() })
	mcptest.Connect(b, context.Background(), h, "bench")
	ts := httptest.NewServer(f.srv.Handler())
	b.Cleanup(ts.Close)
	// The principal's default context, the rounds' parent, exists once it
	// has called.
	p, err := client.NewStreamableHttpClient(ts.URL+PathStreamable, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer bench-token-0123456789abcdef"}))
	must(b, err)
	mcptest.Connect(b, context.Background(), p, "bench")
	must(b, call1(p, "list_pools", nil)())
	p.Close()
	figures := map[string][]time.Duration{}
	for r := range rounds {
		_, handle, err := op.CreateChild(context.Background(), f.cfg, operator.ChildSpec{
			Parent: contexts.DefaultID("mcp-http/env:AIRLOCK_TEST_TOKEN_MCP", "mcp-http"), Phase: contexts.PhaseExecution}, "bench", fmt.Sprint("round ", r))
		must(b, err)
		c, err := client.NewStreamableHttpClient(ts.URL+PathStreamable, transport.WithHTTPHeaders(map[string]string{
			"Authorization": "Bearer bench-token-0123456789abcdef", HeaderContext: handle}))
		must(b, err)
		mcptest.Connect(b, context.Background(), c, "bench")
		first := call1(c, "declare_need", upstreamNeed("mem", "get", get))
		start := time.Now()
		must(b, first())
		figures["stdio cold start"] = append(figures["stdio cold start"], time.Since(start))
		sides := []warmSide{
			{"stdio direct", call1(d, "get", get)}, {"stdio airlock", first},
			{"http direct", call1(h, "echo", echo)}, {"http airlock", call1(c, "declare_need", mcpNeed("echo", echo))},
			// Airlock's own cost of a governed call that reaches no upstream.
			{"read_pool_file", call1(c, "read_pool_file", map[string]any{"pool": "alpha", "path": "hello.txt"})},
		}
		for i := range sides {
			s := sides[(i+r)%len(sides)]
			figures[s.name] = append(figures[s.name], timePerCall(b, s, n))
		}
		c.Close()
	}
	med := map[string]time.Duration{}
	for name, d := range figures {
		slices.Sort(d)
		med[name] = d[len(d)/2]
	}
	reportRatio(b, "stdio", med["stdio direct"], med["stdio airlock"])
	reportRatio(b, "http", med["http direct"], med["http airlock"])
	fmt.Printf("UPSTREAM stdio cold start (first call of a context): median %v; a governed read_pool_file in the same contexts: %v/call\n",
		med["stdio cold start"], med["read_pool_file"])
	b.ReportMetric(float64(med["stdio cold start"].Microseconds())/1000, "cold-ms")
	for range b.N {
		// The figures are the rounds above; b.N only satisfies the runner.
	}
}

// warmSide is one side: a call made n times in a row.
type warmSide struct {
	name string
	call func() error
}

// timePerCall makes 3 calls to warm up, then n, and returns the time per
// call of the n.
func timePerCall(tb testing.TB, s warmSide, n int) time.Duration {
	for range 3 {
		if err := s.call(); err != nil {
			tb.Fatalf("%s: %v", s.name, err)
		}
	}
	start := time.Now()
	for range n {
		if err := s.call(); err != nil {
			tb.Fatalf("%s: %v", s.name, err)
		}
	}
	return time.Since(start) / time.Duration(n)
}

// call1 calls tool on c with args; an error result is an error.
func call1(c *client.Client, tool string, args map[string]any) func() error {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	return func() error {
		res, err := c.CallTool(context.Background(), req)
		if err == nil && res.IsError {
			err = fmt.Errorf("%s", strings.TrimSpace(text(res)))
		}
		return err
	}
}

func reportRatio(b *testing.B, what string, direct, airlock time.Duration) {
	ratio := float64(airlock) / float64(direct)
	fmt.Printf("UPSTREAM %s (median of rounds): direct %v/call, through Airlock (warm) %v/call, ratio %.2f×\n", what, direct, airlock, ratio)
	b.ReportMetric(ratio, what+"-ratio")
}
