package benchpeers

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testkit/mcptest"
	"github.com/goccy/go-yaml"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// fsServer is the official filesystem server, installed by make e2e-deps.
var fsServer = filepath.Join(root, "e2e", "node_modules", ".bin", "mcp-server-filesystem")

// BenchmarkPeersStdio: Airlock's read_pool_file over stdio against the
// official filesystem server's read_text_file, same file, same mcp-go
// stdio client, calls one after another. Target (issue 11): ≥ 2× its
// calls/s.
func BenchmarkPeersStdio(b *testing.B) { peersStdio(b, full, b.ReportMetric) }

func peersStdio(tb testing.TB, sc scale, metric func(float64, string)) {
	if _, err := os.Stat(fsServer); err != nil {
		tb.Skip("the filesystem server is missing: run make e2e-deps")
	}
	fx := newFixture(tb)
	type side struct {
		c   *client.Client
		pid int
		req mcp.CallToolRequest
	}
	fsReq := mcp.CallToolRequest{}
	fsReq.Params.Name = "read_text_file"
	fsReq.Params.Arguments = map[string]any{"path": fx.file}
	fsc, fsPid := stdioClient(tb, nil, fsServer, filepath.Dir(fx.file))
	all := map[string]side{"filesystem": {fsc, fsPid, fsReq}}
	for name, bin := range airlockBins(tb) {
		c, pid := stdioClient(tb, nil, bin, "serve", "--config", fx.cfg, "--state", tb.TempDir())
		all[name] = side{c, pid, readReq()}
	}
	var names []string
	for n, s := range all {
		names = append(names, n)
		callsPerSecond(tb, s.c, s.req, sc.stdioCalls/10+1) // warm up
	}
	figures, cpu := map[string][]float64{}, map[string][]float64{}
	for r := range sc.rounds {
		for _, n := range sides(names, r) {
			cpu0 := cpuTime(tb, all[n].pid)
			figures[n] = append(figures[n], callsPerSecond(tb, all[n].c, all[n].req, sc.stdioCalls))
			cpu[n] = append(cpu[n], float64((cpuTime(tb, all[n].pid)-cpu0).Microseconds())/float64(sc.stdioCalls))
		}
	}
	ratios := report(tb, fmt.Sprintf("stdio read calls=%d", sc.stdioCalls), "calls/s", "filesystem", "/", figures,
		func(side, base float64) float64 { return side / base })
	// The server's CPU per call (from /proc, 10 ms ticks) is steadier than
	// calls/s on a loaded machine.
	report(tb, fmt.Sprintf("stdio server-cpu calls=%d", sc.stdioCalls), "µs/call", "filesystem", "/", cpu,
		func(side, base float64) float64 { return side / base })
	metric(ratios["airlock"].med, "ratio")
}

// stdioClient starts argv as an MCP server on stdio, initialized, its
// stderr drained (Airlock logs a line per call; a full pipe would block
// it), and returns it with the server's process id.
func stdioClient(tb testing.TB, env []string, argv ...string) (*client.Client, int) {
	var cmd *exec.Cmd
	c, err := client.NewStdioMCPClientWithOptions(argv[0], env, argv[1:], transport.WithCommandFunc(
		func(ctx context.Context, command string, env []string, args []string) (*exec.Cmd, error) {
			cmd = exec.CommandContext(ctx, command, args...)
			cmd.Env = append(os.Environ(), env...)
			return cmd, nil
		}))
	must(tb, err)
	tb.Cleanup(func() { c.Close() })
	if t, ok := c.GetTransport().(*transport.Stdio); ok {
		go io.Copy(io.Discard, t.Stderr())
	}
	mcptest.Initialize(tb, withTimeout(tb, 30*time.Second), c, "airlock-benchpeers", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	return c, cmd.Process.Pid
}

// callsPerSecond makes n calls in a row and returns calls/s; every answer
// must be a full, successful one.
func callsPerSecond(tb testing.TB, c *client.Client, req mcp.CallToolRequest, n int) float64 {
	start := time.Now()
	for range n {
		res, err := c.CallTool(context.Background(), req)
		if err != nil || res.IsError || textLen(res) < fileBytes {
			tb.Fatalf("%s: err %v, result %+v", req.Params.Name, err, res)
		}
	}
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkPeersPipeline: run_pipeline sales_summary (demo configuration,
// over stdio, in the real sandbox) end to end against the same awk argv
// run directly with os/exec; the median call's milliseconds per round.
// Target: ≤ 10 ms overhead (issue 11), ≤ 5 ms (issue 27).
func BenchmarkPeersPipeline(b *testing.B) { peersPipeline(b, full, b.ReportMetric) }

// pipelinePause (AIRLOCK_BENCH_PIPELINE_PAUSE, a duration; default none)
// is left between calls, outside the timed call: the sandbox starts the
// next run's trampoline in advance (a spare), which back-to-back calls on
// a busy machine never let finish first.
var pipelinePause, _ = time.ParseDuration(os.Getenv("AIRLOCK_BENCH_PIPELINE_PAUSE"))

func peersPipeline(tb testing.TB, sc scale, metric func(float64, string)) {
	if os.Geteuid() != 0 {
		tb.Skip("the sandbox needs root")
	}
	argv := demoPipelineArgv(tb, "sales_summary")
	run := map[string]func() time.Duration{"direct": func() time.Duration {
		out := tb.TempDir()
		args := slices.Clone(argv)
		for i, a := range args {
			a = strings.ReplaceAll(a, "{out}", out)
			args[i] = strings.ReplaceAll(a, "{pool.sales}", filepath.Join(root, "internal", "config", "demo", "pools", "sales"))
		}
		start := time.Now()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			tb.Fatalf("direct awk: %v\n%s", err, out)
		}
		return time.Since(start)
	}}
	req := mcp.CallToolRequest{}
	req.Params.Name = "run_pipeline"
	req.Params.Arguments = map[string]any{"pipeline": "sales_summary"}
	for name, bin := range airlockBins(tb) {
		c, _ := stdioClient(tb, nil, bin, "serve", "--state", tb.TempDir())
		run[name] = func() time.Duration {
			start := time.Now()
			res, err := c.CallTool(context.Background(), req)
			if err != nil || res.IsError {
				tb.Fatalf("run_pipeline: err %v, result %+v", err, res)
			}
			return time.Since(start)
		}
	}
	var names []string
	for n, f := range run {
		names = append(names, n)
		f() // warm up
	}
	figures := map[string][]float64{}
	for r := range sc.rounds {
		for _, n := range sides(names, r) {
			var ms []float64
			for range sc.pipelineRuns {
				ms = append(ms, float64(run[n]().Microseconds())/1000)
				time.Sleep(pipelinePause) // untimed: an agent's calls are not back to back
			}
			figures[n] = append(figures[n], spreadOf(ms).med)
		}
	}
	overhead := report(tb, fmt.Sprintf("pipeline sales_summary runs=%d", sc.pipelineRuns), "ms (median call)", "direct", "-", figures,
		func(side, base float64) float64 { return side - base })
	metric(overhead["airlock"].med, "overhead-ms")
}

// demoPipelineArgv reads a pipeline's argv from the demo configuration, so
// the direct side runs exactly what Airlock runs.
func demoPipelineArgv(tb testing.TB, name string) []string {
	b, err := os.ReadFile(filepath.Join(root, "internal", "config", "demo", "airlock.yaml"))
	must(tb, err)
	var cfg struct {
		Pipelines []struct {
			Name string   `yaml:"name"`
			Argv []string `yaml:"argv"`
		} `yaml:"pipelines"`
	}
	must(tb, yaml.Unmarshal(b, &cfg))
	for _, p := range cfg.Pipelines {
		if p.Name == name {
			return p.Argv
		}
	}
	tb.Fatalf("demo pipeline %s not found", name)
	return nil
}
