package tracing

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/airlock-dev/airlock/internal/config"
)

// TestEnabled: off by default; the config or the standard variables turn
// it on; OTEL_SDK_DISABLED and OTEL_TRACES_EXPORTER=none win over both.
func TestEnabled(t *testing.T) {
	on := config.Tracing{Enabled: true}
	for _, tc := range []struct {
		name string
		cfg  config.Tracing
		env  map[string]string
		want bool
	}{
		{"default", config.Tracing{}, nil, false},
		{"config", on, nil, true},
		{"exporter otlp", config.Tracing{}, map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{"endpoint", config.Tracing{}, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true},
		{"traces endpoint", config.Tracing{}, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true},
		{"sdk disabled", on, map[string]string{"OTEL_SDK_DISABLED": "TRUE"}, false},
		{"exporter none", on, map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false},
		{"sdk disabled false", config.Tracing{}, map[string]string{"OTEL_SDK_DISABLED": "false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Enabled(tc.cfg, func(k string) string { return tc.env[k] }); got != tc.want {
				t.Errorf("Enabled = %v, want %v", got, tc.want)
			}
		})
	}
	tr, err := New(context.Background(), config.Tracing{}, nil)
	if tr != nil || err != nil {
		t.Errorf("New with tracing off: %v, %v", tr, err)
	}
}

// TestNilTracerIsANoOp: a server without tracing calls the same methods.
func TestNilTracerIsANoOp(t *testing.T) {
	var tr *Tracer
	c := tr.Start(context.Background(), CallInfo{Tool: "list_pools"}, time.Now())
	if c != nil {
		t.Fatal("a nil tracer started a span")
	}
	c.End([]Step{{Name: "airlock.decide"}}, Outcome{}, time.Now())
	if tr.ForceFlush(context.Background()) != nil || tr.Shutdown(context.Background()) != nil {
		t.Fatal("a nil tracer failed")
	}
}

// TestHeaderSecretUnavailable: a collector header whose secret cannot be
// read stops tracing from starting, and the error does not hold a value.
func TestHeaderSecretUnavailable(t *testing.T) {
	cfg := config.Tracing{Enabled: true, Headers: map[string]config.TokenSource{"Authorization": {Env: "NOPE"}}}
	_, err := New(context.Background(), cfg, &Options{ReadSecret: func(config.TokenSource) (string, error) { return "", nil }})
	if err == nil || !strings.Contains(err.Error(), "Authorization") {
		t.Fatalf("err = %v", err)
	}
}

func TestRequestID(t *testing.T) {
	for in, want := range map[any]string{"abc": "abc", float64(7): "7", int64(9): "9", 3: "3", nil: "", true: ""} {
		if got := RequestID(in); got != want {
			t.Errorf("RequestID(%v) = %q, want %q", in, got, want)
		}
	}
	if got := RequestID(strings.Repeat("x", 500)); len(got) != 128 {
		t.Errorf("a long id is not cut: %d", len(got))
	}
}

// FuzzExtract: any traceparent/tracestate from a request's _meta is
// either a valid W3C context that the result carries exactly, or ignored
// — never a panic, never an error.
func FuzzExtract(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=x")
	f.Add("00-00000000000000000000000000000000-00f067aa0ba902b7-01", "")
	f.Add("ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "a=b,c=d")
	f.Add("00-4BF92F3577B34DA6A3CE929D0E0E4736-00F067AA0BA902B7-01", "")
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra", "=")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, tp, ts string) {
		sc := trace.SpanContextFromContext(Extract(context.Background(), tp, ts))
		if !sc.IsValid() {
			return
		}
		if !sc.IsRemote() || !strings.Contains(tp, sc.TraceID().String()) || !strings.Contains(tp, sc.SpanID().String()) {
			t.Fatalf("%q gave trace %s span %s", tp, sc.TraceID(), sc.SpanID())
		}
		if len(tp) > maxTraceparent {
			t.Fatalf("an oversized traceparent (%d bytes) was used", len(tp))
		}
	})
}
