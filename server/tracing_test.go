package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/edge/tracing"
	"github.com/airlock-dev/airlock/internal/execution/runner"
)

// otlpReceiver is a real OTLP/HTTP traces endpoint on loopback: it decodes
// every ExportTraceServiceRequest it is sent (protobuf, gzip or not).
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	posts int
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	rc := &otlpReceiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		var req collectortrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.posts++
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		rc.mu.Unlock()
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *otlpReceiver) received() ([]*tracepb.Span, int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]*tracepb.Span(nil), rc.spans...), rc.posts
}

func attr(s *tracepb.Span, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			if v := kv.Value.GetStringValue(); v != "" {
				return v, true
			}
			return strings.TrimSpace(kv.Value.String()), true
		}
	}
	return "", false
}

// tracedFixture is testConfig served by a runner whose tracer (if any)
// is built from cfg with no OTEL_* variables set.
func tracedFixture(t *testing.T, cfg config.Tracing) (*fixture, *tracing.Tracer) {
	t.Helper()
	f := newFixture(t, "local")
	tr, err := tracing.New(context.Background(), cfg, &tracing.Options{Getenv: func(string) string { return "" }})
	must(t, err)
	return f.withRunner(t, runner.Options{Tracer: tr}, nil), tr
}

// TestSpansOfRealCalls (issue 12 item 3): real calls through an mcp-go
// client reach a real OTLP/HTTP receiver as one server span each, with
// the runner's steps as children; a call whose _meta carries a traceparent
// is in the caller's trace, under the caller's span; the MCP
// semantic-convention attributes are set (error.type = the violation
// code); no argument value is in any exported attribute or span name; a
// malformed traceparent is ignored, never an error.
func TestSpansOfRealCalls(t *testing.T) {
	rc := newOTLPReceiver(t)
	f, tr := tracedFixture(t, config.Tracing{Enabled: true, Endpoint: rc.URL + "/v1/traces"})
	c := f.connect(t)
	const parentTrace, parentSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	callMeta := func(tool string, args map[string]any, meta map[string]any) *mcp.CallToolResult {
		t.Helper()
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = tool, args
		if meta != nil {
			req.Params.Meta = &mcp.Meta{AdditionalFields: meta}
		}
		res, err := c.CallTool(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res
	}
	argValues := []string{"hello.txt", "zz9-missing-file.txt", "ZZ-ARGUMENT-VALUE-77", "zz_unknown_tool_zz"}
	if res := callMeta("read_pool_file", map[string]any{"pool": "alpha", "path": "hello.txt"},
		map[string]any{"traceparent": "00-" + parentTrace + "-" + parentSpan + "-01", "tracestate": "vendor=x"}); res.IsError {
		t.Fatalf("read: %v", res.Content)
	}
	if res := callMeta("read_pool_file", map[string]any{"pool": "alpha", "path": "zz9-missing-file.txt"},
		map[string]any{"traceparent": "00-not-a-trace-id-zz-01"}); !res.IsError {
		t.Fatal("reading a missing file succeeded")
	}
	if res := callMeta("list_pools", map[string]any{"cursor": "ZZ-ARGUMENT-VALUE-77", "bogus": "ZZ-ARGUMENT-VALUE-77"}, map[string]any{"traceparent": 42}); !res.IsError {
		t.Fatal("invalid arguments accepted")
	}
	// An unknown tool name is the agent's text: its span has no tool name.
	unknown := mcp.CallToolRequest{}
	unknown.Params.Name = "zz_unknown_tool_zz"
	if _, err := c.CallTool(context.Background(), unknown); err == nil {
		t.Fatal("an unknown tool was called")
	}
	must(t, tr.ForceFlush(context.Background()))
	spans, _ := rc.received()

	var calls []*tracepb.Span
	children := map[string][]string{} // parent span id -> child names
	for _, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			calls = append(calls, s)
		} else {
			children[hex.EncodeToString(s.ParentSpanId)] = append(children[hex.EncodeToString(s.ParentSpanId)], s.Name)
		}
		blob, _ := proto.Marshal(s)
		for _, v := range argValues {
			if bytes.Contains(blob, []byte(v)) || strings.Contains(s.Name, v) {
				t.Errorf("span %q carries the argument value %q", s.Name, v)
			}
		}
	}
	if len(calls) != 4 {
		t.Fatalf("%d call spans (of %d spans), want 4", len(calls), len(spans))
	}
	if _, named := attr(calls[3], "gen_ai.tool.name"); calls[3].Name != "tools/call" || named {
		t.Errorf("unknown tool's span: %q (tool name attribute: %v)", calls[3].Name, named)
	}
	if got, _ := attr(calls[3], "error.type"); got != "UNKNOWN_TOOL" {
		t.Errorf("unknown tool's error.type %q", got)
	}
	first := calls[0]
	if hex.EncodeToString(first.TraceId) != parentTrace || hex.EncodeToString(first.ParentSpanId) != parentSpan || first.TraceState != "vendor=x" {
		t.Errorf("first call: trace %x parent %x state %q: not in the caller's trace", first.TraceId, first.ParentSpanId, first.TraceState)
	}
	if hex.EncodeToString(calls[1].TraceId) == parentTrace || len(calls[1].ParentSpanId) != 0 {
		t.Errorf("a malformed traceparent was followed")
	}
	for _, want := range []struct {
		span      *tracepb.Span
		name      string
		attrs     map[string]string
		errorType string
	}{
		{calls[0], "tools/call read_pool_file", map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "read_pool_file",
			"gen_ai.operation.name": "execute_tool", "airlock.decision": "allow", "airlock.outcome": "ok", "airlock.transport": "stdio", "network.transport": "pipe"}, ""},
		{calls[1], "tools/call read_pool_file", map[string]string{"gen_ai.tool.name": "read_pool_file"}, "INTEGRITY_FAILURE"},
		{calls[2], "tools/call list_pools", map[string]string{"gen_ai.tool.name": "list_pools"}, "INVALID_ARGUMENTS"},
	} {
		s := want.span
		if s.Name != want.name {
			t.Errorf("span name %q, want %q", s.Name, want.name)
		}
		for k, v := range want.attrs {
			if got, _ := attr(s, k); got != v {
				t.Errorf("%s: %s = %q, want %q", s.Name, k, got, v)
			}
		}
		for _, k := range []string{"mcp.session.id", "jsonrpc.request.id"} {
			if v, ok := attr(s, k); !ok || v == "" {
				t.Errorf("%s: no %s", s.Name, k)
			}
		}
		got, _ := attr(s, "error.type")
		if got != want.errorType || (want.errorType != "") != (s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR) {
			t.Errorf("%s: error.type %q status %v, want %q", s.Name, got, s.Status.GetCode(), want.errorType)
		}
	}
	if steps := strings.Join(children[hex.EncodeToString(first.SpanId)], ","); steps != "airlock.decide,airlock.execute,airlock.finish,airlock.audit" {
		t.Errorf("steps of a read: %q", steps)
	}
	if steps := strings.Join(children[hex.EncodeToString(calls[2].SpanId)], ","); steps != "airlock.finish,airlock.audit" {
		t.Errorf("steps of a refused call: %q", steps)
	}
}

// TestTracingOffSendsNothing: with tracing off (the default) the runner
// has no tracer and a receiver that is listening gets no request at all.
func TestTracingOffSendsNothing(t *testing.T) {
	rc := newOTLPReceiver(t)
	f, tr := tracedFixture(t, config.Tracing{Endpoint: rc.URL + "/v1/traces"})
	if tr != nil {
		t.Fatal("tracing is on without being asked for")
	}
	c := f.connect(t)
	req := mcp.CallToolRequest{}
	req.Params.Name = "list_pools"
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	if _, err := c.CallTool(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	f.r.Close()
	time.Sleep(100 * time.Millisecond)
	if _, posts := rc.received(); posts != 0 {
		t.Fatalf("%d exports with tracing off", posts)
	}
}

// TestSpansOverHTTP: a call over streamable HTTP is traced with the
// network attributes of HTTP and the MCP session the client holds.
func TestSpansOverHTTP(t *testing.T) {
	rc := newOTLPReceiver(t)
	setTokens(t)
	f := newFixtureConfig(t, withHTTP(t, fmt.Sprintf(testConfig, "local"), ""))
	tr, err := tracing.New(context.Background(), config.Tracing{Enabled: true, Endpoint: rc.URL + "/v1/traces"}, &tracing.Options{Getenv: func(string) string { return "" }})
	must(t, err)
	url := serveLoopback(t, f.withRunner(t, runner.Options{Tracer: tr}, nil).srv)
	c := bearerClient(t, url, tokenOf("agent"))
	req := mcp.CallToolRequest{}
	req.Params.Name = "list_pools"
	req.Params.Meta = &mcp.Meta{AdditionalFields: map[string]any{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	if res, err := c.CallTool(context.Background(), req); err != nil || res.IsError {
		t.Fatalf("list_pools: %v %v", err, res)
	}
	must(t, tr.ForceFlush(context.Background()))
	spans, _ := rc.received()
	var call *tracepb.Span
	for _, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			call = s
		}
	}
	if call == nil {
		t.Fatalf("no call span among %d", len(spans))
	}
	for k, want := range map[string]string{"network.transport": "tcp", "network.protocol.name": "http",
		"airlock.transport": "streamable-http", "mcp.session.id": c.GetSessionId(), "gen_ai.tool.name": "list_pools"} {
		if got, _ := attr(call, k); got != want || want == "" {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if hex.EncodeToString(call.TraceId) != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("trace %x: the HTTP call is not in the caller's trace", call.TraceId)
	}
}
