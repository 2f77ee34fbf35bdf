package tracing

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/airlock-dev/airlock/internal/config"
)

// instrumentation names the tracer (the instrumentation scope).
const instrumentation = "github.com/airlock-dev/airlock/internal/execution/runner"

// Options configure New; nil means defaults.
type Options struct {
	// Getenv reads the OTEL_* variables (os.Getenv).
	Getenv func(string) string
	// ReadSecret reads a header's value from its source.
	ReadSecret func(config.TokenSource) (string, error)
	// Version is reported as service.version.
	Version string
}

// ErrHeader: a collector header's secret could not be read.
var ErrHeader = errors.New("tracing header unavailable")

// Tracer exports the spans of governed calls. Nil means tracing is off.
type Tracer struct {
	tp *sdktrace.TracerProvider
	tr trace.Tracer
}

// Enabled reports whether tracing is on, from cfg and the OTEL_* variables
// (see the package doc).
func Enabled(cfg config.Tracing, getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return cfg.Enabled || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// New returns the Tracer cfg and the environment ask for, or nil when
// tracing is off. The exporter connects lazily: a collector that is down
// costs dropped batches, never a refused call.
func New(ctx context.Context, cfg config.Tracing, opts *Options) (*Tracer, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if !Enabled(cfg, o.Getenv) {
		return nil, nil
	}
	var eopts []otlptracehttp.Option
	if cfg.Endpoint != "" {
		eopts = append(eopts, otlptracehttp.WithEndpointURL(cfg.Endpoint))
	}
	if len(cfg.Headers) > 0 {
		h := map[string]string{}
		for name, src := range cfg.Headers {
			if o.ReadSecret == nil {
				return nil, fmt.Errorf("header %s: %w", name, ErrHeader)
			}
			v, err := o.ReadSecret(src)
			if err != nil || v == "" {
				// The error may name the file; it never holds the value.
				return nil, errors.Join(fmt.Errorf("header %s: %w", name, ErrHeader), err)
			}
			h[name] = v
		}
		eopts = append(eopts, otlptracehttp.WithHeaders(h))
	}
	exp, err := otlptracehttp.New(ctx, eopts...)
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	name := cfg.ServiceName
	if name == "" {
		name = "airlock"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if o.Version != "" {
		attrs = append(attrs, attribute.String("service.version", o.Version))
	}
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithFromEnv())
	if err != nil {
		return nil, fmt.Errorf("trace resource: %w", err)
	}
	popts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if cfg.SampleRatio != nil {
		// A caller's sampling decision (its traceparent's flag) is
		// followed; the ratio decides for calls that start a trace.
		popts = append(popts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*cfg.SampleRatio))))
	}
	tp := sdktrace.NewTracerProvider(popts...)
	return &Tracer{tp: tp, tr: tp.Tracer(instrumentation)}, nil
}

// Shutdown flushes the spans still batched and stops the exporter.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// ForceFlush exports the spans batched so far.
func (t *Tracer) ForceFlush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.ForceFlush(ctx)
}

// maxTraceHeader bounds what is even looked at: a valid traceparent is
// 55 bytes, a tracestate at most 32 members of 256.
const (
	maxTraceparent = 128
	maxTracestate  = 8192
)

// Extract returns ctx carrying the remote span context of a request's
// traceparent and tracestate (from params._meta), or ctx unchanged when
// they are absent or malformed — never an error (FuzzExtract).
func Extract(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" || len(traceparent) > maxTraceparent {
		return ctx
	}
	if len(tracestate) > maxTracestate {
		tracestate = ""
	}
	carrier := propagation.MapCarrier{"traceparent": traceparent}
	if tracestate != "" {
		carrier["tracestate"] = tracestate
	}
	return propagation.TraceContext{}.Extract(ctx, carrier)
}

// CallInfo is what is known of a call when it starts.
type CallInfo struct {
	Tool        string // one of Airlock's tools, or "" for an unknown name
	SessionID   string // the transport session, "" when sessionless
	RequestID   string // the JSON-RPC id, "" when unknown
	Transport   string // "stdio", "streamable-http", "sse", "inprocess"
	Traceparent string // from params._meta
	Tracestate  string
}

// Call is one governed call's span. Nil when tracing is off.
type Call struct {
	span trace.Span
	ctx  context.Context
}

// Start opens the call's span (a child of the caller's trace when its
// traceparent is valid). It returns nil when t is nil.
func (t *Tracer) Start(ctx context.Context, in CallInfo, at time.Time) *Call {
	if t == nil {
		return nil
	}
	ctx = Extract(ctx, in.Traceparent, in.Tracestate)
	name := "tools/call"
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", "tools/call"),
		attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("jsonrpc.protocol.version", "2.0"),
	}
	if in.Tool != "" {
		name += " " + in.Tool
		attrs = append(attrs, attribute.String("gen_ai.tool.name", in.Tool))
	}
	if in.SessionID != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", in.SessionID))
	}
	if in.RequestID != "" {
		attrs = append(attrs, attribute.String("jsonrpc.request.id", in.RequestID))
	}
	switch in.Transport {
	case "stdio":
		attrs = append(attrs, attribute.String("network.transport", "pipe"))
	case "streamable-http", "sse":
		attrs = append(attrs, attribute.String("network.transport", "tcp"), attribute.String("network.protocol.name", "http"))
	}
	if in.Transport != "" {
		attrs = append(attrs, attribute.String("airlock.transport", in.Transport))
	}
	ctx, span := t.tr.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(at), trace.WithAttributes(attrs...))
	return &Call{span: span, ctx: ctx}
}

// Step is one runner step's interval, a child span of the call.
type Step struct {
	Name       string // "airlock.decide", "airlock.execute", "airlock.finish", "airlock.audit"
	Start, End time.Time
}

// Outcome is what the runner decided and how the call ended.
type Outcome struct {
	Tool      string // the tool's name once known to be one of ours
	Tier      string
	Phase     string
	Decision  string
	RuleID    string
	Outcome   string
	Violation string // the violation code, "" on success
	AuditSeq  int64
}

// End records the steps and the outcome and ends the span at end.
func (c *Call) End(steps []Step, out Outcome, end time.Time) {
	if c == nil {
		return
	}
	for _, st := range steps {
		if st.Start.IsZero() || st.End.Before(st.Start) {
			continue
		}
		_, s := c.span.TracerProvider().Tracer(instrumentation).Start(c.ctx, st.Name, trace.WithTimestamp(st.Start), trace.WithSpanKind(trace.SpanKindInternal))
		s.End(trace.WithTimestamp(st.End))
	}
	attrs := make([]attribute.KeyValue, 0, 8)
	add := func(k, v string) {
		if v != "" {
			attrs = append(attrs, attribute.String(k, v))
		}
	}
	add("airlock.tier", out.Tier)
	add("airlock.phase", out.Phase)
	add("airlock.decision", out.Decision)
	add("airlock.rule_id", out.RuleID)
	add("airlock.outcome", out.Outcome)
	if out.AuditSeq != 0 {
		attrs = append(attrs, attribute.Int64("airlock.audit.seq", out.AuditSeq))
	}
	if out.Violation != "" {
		attrs = append(attrs, attribute.String("error.type", out.Violation))
		c.span.SetStatus(codes.Error, out.Violation)
	}
	c.span.SetAttributes(attrs...)
	c.span.End(trace.WithTimestamp(end))
}

// RequestID renders a JSON-RPC id (a number or a string) for the
// jsonrpc.request.id attribute; other values give "".
func RequestID(id any) string {
	switch v := id.(type) {
	case string:
		if len(v) > 128 {
			return v[:128]
		}
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case fmt.Stringer:
		s := v.String()
		if len(s) > 128 {
			s = s[:128]
		}
		return s
	}
	return ""
}
