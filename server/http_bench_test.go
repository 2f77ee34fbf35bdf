package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/airlock-dev/airlock/internal/testkit/mcptest"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkHTTPReadGoverned: governed read_pool_file over streamable HTTP
// in one process (1 or 8 mcp-go clients, loopback), for CPU profiles of
// the whole per-call path — edge, gate, runner, mcp-go, the audit commit:
// go test -run '^$' -bench HTTPReadGoverned/clients=8 -cpuprofile cpu.out ./server
// (internal/testkit/benchpeers measures the same against its peers, out of process).
func BenchmarkHTTPReadGoverned(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) { benchHTTPRead(b, n) })
	}
}

func benchHTTPRead(b *testing.B, clients int) {
	b.Setenv("AIRLOCK_TEST_TOKEN", testToken)
	f := newFixture(b, "local")
	ts := httptest.NewServer(f.srv.Handler())
	b.Cleanup(ts.Close)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	pool := benchClients(b, ts.URL+PathStreamable, testToken, clients, transport.WithHTTPBasicClient(hc))
	req := mcp.CallToolRequest{}
	req.Params.Name = "read_pool_file"
	req.Params.Arguments = map[string]any{"pool": "alpha", "path": benchPath()}
	b.SetParallelism(max(1, clients/2))
	b.ReportAllocs()
	b.ResetTimer()
	callParallel(b, pool, req)
}

// callParallel makes req from b's parallel goroutines, each borrowing a
// client from pool, until b.N calls are made; an error or an error result
// fails the benchmark rather than counting as a fast call.
func callParallel(b *testing.B, pool chan *client.Client, req mcp.CallToolRequest) {
	b.RunParallel(func(pb *testing.PB) {
		c := <-pool
		defer func() { pool <- c }()
		for pb.Next() {
			res, err := c.CallTool(context.Background(), req)
			if err != nil || res.IsError {
				b.Errorf("call: %v %+v", err, res)
				return
			}
		}
	})
}

// benchClients starts n initialized streamable HTTP clients of url with a
// bearer token, closed when the benchmark ends, as a pool the benchmark's
// goroutines take from and give back to.
func benchClients(b *testing.B, url, token string, n int, opts ...transport.StreamableHTTPCOption) chan *client.Client {
	b.Helper()
	pool := make(chan *client.Client, n)
	opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	for range n {
		c, err := client.NewStreamableHttpClient(url, opts...)
		must(b, err)
		mcptest.Connect(b, context.Background(), c, "airlock-bench")
		pool <- c
	}
	return pool
}

func benchPath() string {
	if p := os.Getenv("AIRLOCK_BENCH_PATH"); p != "" {
		return p
	}
	return "hello.txt"
}
