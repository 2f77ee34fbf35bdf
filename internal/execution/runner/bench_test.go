package runner

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/edge/tracing"
	"github.com/airlock-dev/airlock/internal/policy/policy"
)

// The governed path (all thirteen steps, including a durable audit append)
// against the same read_pool_file handler called directly. The ratio is the
// price of the boundary; BENCHMARKS.md records it.

var readArgs = json.RawMessage(`{"pool":"p","path":"long.txt"}`)

// benchCfgYAML lets the 200-byte file come back whole in one page (the
// tests' 64-byte output limit is for truncation cases).
var benchCfgYAML = strings.Replace(cfgYAML, "max_output_bytes: 64", "max_output_bytes: 4096", 1)

// benchSession is a runner on benchCfgYAML with opts, and a session on it.
func benchSession(b *testing.B, opts *Options) (*Runner, *Session) {
	b.Helper()
	r, _ := newRunnerWith(b, benchCfgYAML, opts)
	return r, openSession(b, r)
}

func BenchmarkReadDirectHandler(b *testing.B) {
	r, s := benchSession(b, nil)
	tool := r.tools["read_pool_file"]
	args, _, err := decode(tool, r.gen.Load().tools[tool.Name].Validator, readArgs)
	if err != nil {
		b.Fatal(err)
	}
	c := &call{s: s, rec: audit.Call(r.now().UTC(), s.actor(), "", nil)}
	ctx := context.Background()
	if err := c.load(ctx); err != nil {
		b.Fatal(err)
	}
	env := c.env(policy.Decision{Effect: policy.Allow})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tool.Handle(ctx, env, args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadGoverned(b *testing.B) {
	_, s := benchSession(b, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if resp := s.Run(ctx, Call{Tool: "read_pool_file", Args: readArgs}); resp.IsError {
			b.Fatal(resp.Text)
		}
	}
}

// BenchmarkReadGovernedTraced is ReadGoverned with tracing on: a span
// and four step spans per call, batched and exported over OTLP/HTTP to a
// loopback receiver that discards them (issue 12 item 3; BENCHMARKS.md).
func BenchmarkReadGovernedTraced(b *testing.B) {
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer sink.Close()
	tr, err := tracing.New(context.Background(), config.Tracing{Enabled: true, Endpoint: sink.URL + "/v1/traces"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	_, s := benchSession(b, &Options{Tracer: tr})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if resp := s.Run(ctx, Call{Tool: "read_pool_file", Args: readArgs, Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}); resp.IsError {
			b.Fatal(resp.Text)
		}
	}
}

// BenchmarkReadGovernedParallel: concurrent calls share group commits.
func BenchmarkReadGovernedParallel(b *testing.B) {
	_, s := benchSession(b, nil)
	ctx := context.Background()
	b.SetParallelism(16)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if resp := s.Run(ctx, Call{Tool: "read_pool_file", Args: readArgs}); resp.IsError {
				b.Error(resp.Text)
				return
			}
		}
	})
}

// BenchmarkReadGovernedNoCommit runs steps 1-12 exactly as Run does but
// skips the durable append of step 13, separating the boundary's CPU cost
// from the cost of an fsync per call.
func BenchmarkReadGovernedNoCommit(b *testing.B) {
	r, s := benchSession(b, nil)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c := &call{s: s, in: Call{Tool: "read_pool_file", Args: readArgs}, rec: audit.Call(r.now().UTC(), s.actor(), "read_pool_file", nil), start: r.now()}
		c.rec.Args = r.redactArgs(readArgs)
		res, err := c.steps(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if resp := c.render(res); resp.IsError {
			b.Fatal(resp.Text)
		}
	}
}

// TestBenchmarksRun is the harnesses' smoke test: make bench must not be
// the first place a broken benchmark shows (a change of the output limit
// once made every one of these fail before measuring anything).
func TestBenchmarksRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs each benchmark for its default time")
	}
	for name, bf := range map[string]func(*testing.B){
		"ReadDirectHandler": BenchmarkReadDirectHandler, "ReadGoverned": BenchmarkReadGoverned,
		"ReadGovernedParallel": BenchmarkReadGovernedParallel, "ReadGovernedNoCommit": BenchmarkReadGovernedNoCommit,
		"ReadGovernedTraced": BenchmarkReadGovernedTraced,
	} {
		if r := testing.Benchmark(bf); r.N == 0 {
			t.Errorf("Benchmark%s failed before measuring anything", name)
		}
	}
}
