package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"
)

// BenchmarkHTTPSessionMemory: live heap per initialized streamable HTTP
// session (1,000 of them, after a GC), in one process, for heap profiles
// of what a session keeps: go test -run '^$' -bench HTTPSessionMemory
// -memprofile mem.out ./server (internal/testkit/benchpeers compares the resident
// memory of the same against plain mcp-go, out of process).
func BenchmarkHTTPSessionMemory(b *testing.B) {
	b.Setenv("AIRLOCK_TEST_TOKEN", testToken)
	f := newFixtureConfig(b, withHTTP(b, fmt.Sprintf(testConfig, "local"), "max_sessions_per_principal: 4096"))
	ts := httptest.NewServer(f.srv.Handler())
	b.Cleanup(ts.Close)
	const sessions = 1000
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	post := func(body, sid string) string {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+PathStreamable, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+testToken)
		if sid != "" {
			req.Header.Set(mcpserver.HeaderKeySessionID, sid)
		}
		resp, err := hc.Do(req)
		must(b, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			b.Fatalf("HTTP %d", resp.StatusCode)
		}
		return resp.Header.Get(mcpserver.HeaderKeySessionID)
	}
	init := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	var before, after runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		for range sessions {
			sid := post(init, "")
			post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
	}
	b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/sessions, "heap-B/session")
}
