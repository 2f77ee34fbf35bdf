package server

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/config"

	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/testkit/mcptest"
	"github.com/airlock-dev/airlock/internal/testkit/testpool"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkStdioReadGoverned: governed read_pool_file over ServeStdio on
// kernel pipes, one mcp-go client calling one call after another, the
// server logging to a file as `airlock serve` logs to stderr — for CPU
// profiles of the stdio path (filter, mcp-go, runner, the audit commit):
// go test -run '^$' -bench StdioReadGoverned -cpuprofile cpu.out ./server
// (internal/testkit/benchpeers measures the real binary against the
// official filesystem server).
func BenchmarkStdioReadGoverned(b *testing.B) {
	f := newFixture(b, "local")
	logf, err := os.Create(filepath.Join(b.TempDir(), "stderr"))
	must(b, err)
	b.Cleanup(func() { logf.Close() })
	f = f.withRunner(b, runner.Options{Logger: slog.New(slog.NewTextHandler(logf, nil))}, &Options{Logger: slog.New(slog.NewTextHandler(logf, nil))})
	c := stdioPipeClient(b, f)
	req := mcp.CallToolRequest{}
	req.Params.Name = "read_pool_file"
	req.Params.Arguments = map[string]any{"pool": "alpha", "path": "hello.txt"}
	b.ReportAllocs()
	for b.Loop() {
		res, err := c.CallTool(context.Background(), req)
		if err != nil || res.IsError {
			b.Fatalf("call: %v %+v", err, res)
		}
	}
}

// stdioPipeClient serves f over ServeStdio on two kernel pipes, as a
// client's subprocess would be served, and returns an initialized mcp-go
// client on the other ends.
func stdioPipeClient(tb testing.TB, f *fixture) *client.Client {
	tb.Helper()
	inR, inW, err := os.Pipe()
	must(tb, err)
	outR, outW, err := os.Pipe()
	must(tb, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = f.srv.ServeStdio(ctx, inR, outW); outW.Close(); close(done) }()
	c := client.NewClient(transport.NewIO(outR, inW, nil))
	tb.Cleanup(func() { c.Close(); inR.Close(); cancel(); <-done; outR.Close() })
	must(tb, c.Start(context.Background()))
	mcptest.Initialize(tb, context.Background(), c, "airlock-bench", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	return c
}

// BenchmarkStdioPagedRead: a 32 MiB random file of a trusted pool read
// whole over ServeStdio by the mcp-go client in pages of max_read_bytes,
// each page's blob decoded — for CPU profiles of a page's per-byte costs
// (encoding, hashing, the transport). internal/testkit/benchpeers measures
// 100 MiB end to end against `cat | sha256sum`.
func BenchmarkStdioPagedRead(b *testing.B) {
	const size = 32 << 20
	page := config.DefaultMaxReadBytes
	if v, err := strconv.Atoi(os.Getenv("AIRLOCK_BENCH_PAGE")); err == nil {
		page = v
	}
	cfg := strings.Replace(fmt.Sprintf(testConfig, "local"), "max_read_bytes: 4096\n  max_output_bytes: 16384",
		fmt.Sprintf("max_read_bytes: %d\n  max_output_bytes: %d", page, max(page, config.DefaultMaxOutputBytes)), 1)
	f := newFixtureConfig(b, cfg)
	data := make([]byte, size)
	rand.Read(data)
	testpool.WriteFile(b, filepath.Join(f.dir, "pools", "alpha"), "big.bin", string(data))
	appendManifest(b, filepath.Join(f.dir, "pools", "alpha"), "big.bin", string(data))
	f = f.withRunner(b, runner.Options{}, nil)
	c := stdioPipeClient(b, f)
	b.SetBytes(size)
	for b.Loop() {
		var off int64
		for {
			req := mcp.CallToolRequest{}
			req.Params.Name = "read_pool_file"
			req.Params.Arguments = map[string]any{"pool": "alpha", "path": "big.bin", "offset": off, "limit": page}
			res, err := c.CallTool(context.Background(), req)
			if err != nil || res.IsError {
				b.Fatalf("page at %d: %v %+v", off, err, res)
			}
			blob := res.Content[1].(mcp.EmbeddedResource).Resource.(mcp.BlobResourceContents).Blob
			n, err := base64.StdEncoding.DecodedLen(len(blob)), error(nil)
			if _, err = base64.StdEncoding.DecodeString(blob); err != nil {
				b.Fatal(err)
			}
			meta := res.StructuredContent.(map[string]any)
			if meta["eof"] == true {
				break
			}
			off += int64(n) - int64(strings.Count(blob[len(blob)-2:], "="))
		}
	}
}
