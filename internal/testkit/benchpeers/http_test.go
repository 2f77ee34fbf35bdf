package benchpeers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testkit/mcptest"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// scale sizes every harness: full for make bench, tiny for the smoke test.
type scale struct {
	rounds       int
	window       time.Duration // per side and round, HTTP
	clients      []int
	sessions     int
	stdioCalls   int           // per side and round
	pipelineRuns int           // per side and round
	pagedBytes   int           // the paged read's file
	loadWindow   time.Duration // per side and round, sessions calling
}

var (
	full  = scale{rounds: 3, window: 2 * time.Second, clients: []int{1, 8, 32, 128}, sessions: 1000, stdioCalls: 1000, pipelineRuns: 40, pagedBytes: 100 << 20, loadWindow: 10 * time.Second}
	smoke = scale{rounds: 1, window: 150 * time.Millisecond, clients: []int{1, 4}, sessions: 20, stdioCalls: 20, pipelineRuns: 2, pagedBytes: 1 << 20, loadWindow: 150 * time.Millisecond}
)

// BenchmarkPeersHTTP: governed read_pool_file over streamable HTTP against
// the plain mcp-go baseline, calls/s at 1, 8, 32 and 128 concurrent
// clients. Targets (issue 11): ≥ 0.8× at 1 client, ≥ 0.9× at 8–128.
func BenchmarkPeersHTTP(b *testing.B) { peersHTTP(b, full, b.ReportMetric) }

func peersHTTP(b testing.TB, sc scale, metric func(float64, string)) {
	fx := newFixture(b)
	servers := map[string]*proc{"plain": startPlainHTTP(b, fx)}
	for name, bin := range airlockBins(b) {
		servers[name] = startAirlockHTTP(b, bin, fx)
	}
	var names []string
	for n := range servers {
		names = append(names, n)
	}
	for _, c := range sc.clients {
		pools := map[string][]*client.Client{}
		for n, p := range servers {
			pools[n] = httpClients(b, p.addr, c)
			callFor(b, pools[n], sc.window/4) // warm up
		}
		figures, cpu := map[string][]float64{}, map[string][]float64{}
		for r := range sc.rounds {
			for _, n := range sides(names, r) {
				pid := servers[n].cmd.Process.Pid
				cpu0 := cpuTime(b, pid)
				rate := callFor(b, pools[n], sc.window)
				figures[n] = append(figures[n], rate)
				cpu[n] = append(cpu[n], float64((cpuTime(b, pid)-cpu0).Microseconds())/(rate*sc.window.Seconds()))
			}
		}
		ratios := report(b, fmt.Sprintf("http read_pool_file clients=%d", c), "calls/s", "plain", "/", figures,
			func(side, base float64) float64 { return side / base })
		report(b, fmt.Sprintf("http server-cpu clients=%d", c), "µs/call", "plain", "/", cpu,
			func(side, base float64) float64 { return side / base })
		metric(ratios["airlock"].med, fmt.Sprintf("ratio-c%d", c))
		for _, cs := range pools {
			for _, cl := range cs {
				cl.Close()
			}
		}
	}
}

// readReq is the call both sides answer: same tool, same arguments.
func readReq() mcp.CallToolRequest {
	req := mcp.CallToolRequest{}
	req.Params.Name = "read_pool_file"
	req.Params.Arguments = map[string]any{"pool": "bench", "path": "data.csv"}
	return req
}

// httpClients opens n initialized mcp-go streamable HTTP clients to addr,
// each on its own keep-alive connection (net/http's default of two idle
// connections per host would make concurrent clients reconnect).
func httpClients(tb testing.TB, addr string, n int) []*client.Client {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n + 4, MaxConnsPerHost: 0, IdleConnTimeout: time.Minute}}
	tb.Cleanup(hc.CloseIdleConnections)
	var cs []*client.Client
	for range n {
		c, err := client.NewStreamableHttpClient("http://"+addr+"/mcp",
			transport.WithHTTPBasicClient(hc),
			transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + benchToken}))
		must(tb, err)
		mcptest.Connect(tb, withTimeout(tb, 30*time.Second), c, "airlock-benchpeers")
		cs = append(cs, c)
	}
	return cs
}

// callFor calls read_pool_file from every client concurrently for d and
// returns calls/s. Every answer is checked: an error or a short answer
// fails the benchmark rather than counting as a fast call.
func callFor(tb testing.TB, cs []*client.Client, d time.Duration) float64 {
	req := readReq()
	var calls atomic.Int64
	var failed atomic.Value
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				res, err := c.CallTool(context.Background(), req)
				if err != nil || res.IsError || textLen(res) < fileBytes {
					failed.CompareAndSwap(nil, fmt.Sprintf("call: err %v, result %+v", err, res))
					return
				}
				calls.Add(1)
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f != nil {
		tb.Fatal(f)
	}
	return float64(calls.Load()) / time.Since(start).Seconds()
}

func textLen(res *mcp.CallToolResult) int {
	n := 0
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			n += len(t.Text)
		}
	}
	return n
}

// BenchmarkPeersSessionMemory: resident memory per initialized HTTP
// session, 1,000 sessions, each side a fresh process. Target (issue 11):
// ≤ 1.2× the plain mcp-go server's.
func BenchmarkPeersSessionMemory(b *testing.B) { peersSessionMemory(b, full, b.ReportMetric) }

func peersSessionMemory(b testing.TB, sc scale, metric func(float64, string)) {
	starts, names := freshHTTPServers(b, newFixture(b))
	perSession, peak := map[string][]float64{}, map[string][]float64{}
	for r := range sc.rounds {
		for _, n := range sides(names, r) {
			p := starts[n]()
			time.Sleep(200 * time.Millisecond) // let start-up settle
			before, _ := rss(b, p.cmd.Process.Pid)
			openSessions(b, p.addr, sc.sessions)
			after, hwm := rss(b, p.cmd.Process.Pid)
			perSession[n] = append(perSession[n], float64(after-before)/float64(sc.sessions)/1024)
			peak[n] = append(peak[n], float64(hwm)/(1<<20))
			p.cmd.Process.Kill()
		}
	}
	ratio := func(side, base float64) float64 { return side / base }
	rs := report(b, fmt.Sprintf("http sessions=%d per-session", sc.sessions), "KiB", "plain", "/", perSession, ratio)
	rp := report(b, fmt.Sprintf("http sessions=%d peak-rss", sc.sessions), "MiB", "plain", "/", peak, ratio)
	metric(rs["airlock"].med, "ratio-per-session")
	metric(rp["airlock"].med, "ratio-peak-rss")
}

// freshHTTPServers is a starter per side (plain and each Airlock binary),
// each call a fresh server process, and the sides' names.
func freshHTTPServers(tb testing.TB, fx fixture) (map[string]func() *proc, []string) {
	starts := map[string]func() *proc{"plain": func() *proc { return startPlainHTTP(tb, fx) }}
	for name, bin := range airlockBins(tb) {
		starts[name] = func() *proc { return startAirlockHTTP(tb, bin, fx) }
	}
	var names []string
	for n := range starts {
		names = append(names, n)
	}
	return starts, names
}

// openSessions initializes n streamable HTTP sessions with raw requests
// (initialize, then notifications/initialized), from a few workers on
// keep-alive connections, and leaves them open.
func openSessions(tb testing.TB, addr string, n int) {
	workers := min(n, 2*runtime.GOMAXPROCS(0))
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	post := func(body, session string) (string, error) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+benchToken)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode/100 != 2 {
			return "", fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return resp.Header.Get("Mcp-Session-Id"), nil
	}
	initBody := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"` + mcp.LATEST_LEGACY_PROTOCOL_VERSION +
		`","capabilities":{},"clientInfo":{"name":"airlock-benchpeers","version":"1"}}}`
	var next atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				id, err := post(initBody, "")
				if err == nil && id == "" {
					err = fmt.Errorf("no Mcp-Session-Id")
				}
				if err == nil {
					_, err = post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, id)
				}
				if err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f != nil {
		tb.Fatalf("opening sessions: %v", f)
	}
}
