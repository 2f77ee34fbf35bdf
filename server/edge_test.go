package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/testkit/syncbuf"
)

// edgeServer is a fixture served by the real ServeHTTP (tracked listener,
// timeouts) on loopback, with the given transports.http settings.
func edgeServer(t *testing.T, httpYAML string) (*fixture, string) {
	t.Helper()
	t.Setenv("AIRLOCK_TEST_TOKEN", testToken)
	cfgText := withHTTP(t, fmt.Sprintf(testConfig, "local"), httpYAML)
	f := newFixtureConfig(t, cfgText)
	return f, serveLoopback(t, f.srv)
}

// post sends one raw POST to /mcp with the test token (unless auth is
// given) and returns status and body.
func post(t *testing.T, url, body string, hdr map[string]string) (int, string) {
	t.Helper()
	req := mcpRequest(t, http.MethodPost, url, strings.NewReader(body), "Bearer "+testToken)
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, b := roundTrip(t, req)
	return resp.StatusCode, string(b)
}

// validClient initializes a real mcp-go client and lists pools: the proof
// that a client with a token is still served.
func validClient(t *testing.T, url string) {
	t.Helper()
	c := bearerClient(t, url, testToken, transport.WithHTTPTimeout(10*time.Second))
	if res := call(t, c, "list_pools", nil); res.IsError || !strings.Contains(text(res), "alpha") {
		t.Fatalf("valid client not served: %s", text(res))
	}
}

// refused checks one exchange the edge refused: it answered status, and the
// audit trail counts n refusals of code in all (the earlier ones included).
func (f *fixture) refused(t *testing.T, what string, resp *http.Response, err error, status int, code violation.Code, n int) {
	t.Helper()
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != status {
		t.Fatalf("%s: %d, want %d", what, resp.StatusCode, status)
	}
	if _, total := f.edgeRefusals(t, code); total != n {
		t.Fatalf("%s counted %d times, want %d", code, total, n)
	}
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

func TestOriginIsChecked(t *testing.T) {
	f, url := edgeServer(t, `{allowed_origins: [loopback, "https://app.example"]}`)
	for _, tc := range []struct {
		origin string
		want   int
	}{
		{"", http.StatusOK},
		{"http://localhost:6274", http.StatusOK},
		{"https://app.example", http.StatusOK},
		{"http://evil.example", http.StatusForbidden},
		{"null", http.StatusForbidden},
		{"http://127.0.0.1.evil.example", http.StatusForbidden},
	} {
		status, body := post(t, url, initBody, map[string]string{"Origin": tc.origin})
		if status != tc.want {
			t.Errorf("Origin %q: status %d, want %d (%s)", tc.origin, status, tc.want, body)
		}
	}
	// SSE too, and before authentication: a page cannot even learn
	// whether a token would be needed.
	req, _ := http.NewRequest(http.MethodGet, url+PathSSE, nil)
	req.Header.Set("Origin", "http://evil.example")
	resp, err := http.DefaultClient.Do(req)
	f.refused(t, "SSE with a foreign Origin", resp, err, http.StatusForbidden, violation.OriginRefused, 4)
}

func TestAnonymousRoleOffLoopback(t *testing.T) {
	t.Setenv("AIRLOCK_TEST_TOKEN", testToken)
	cfg := withHTTP(t, fmt.Sprintf(testConfig, "local"), "anonymous_role: agent")
	f := newFixtureConfig(t, cfg)
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	must(t, err)
	defer ln.Close()
	if err := f.srv.ServeHTTP(context.Background(), ln); err != ErrAnonymousRemote {
		t.Fatalf("ServeHTTP on 0.0.0.0 with anonymous_role = %v, want ErrAnonymousRemote", err)
	}
	// Forced: served, with a warning in the log.
	var logBuf syncbuf.Buffer
	cfg = strings.Replace(cfg, "anonymous_role: agent}", "anonymous_role: agent, allow_anonymous_remote: true}", 1)
	f = newFixtureConfig(t, cfg)
	srv, err := New(f.r, &Options{Logger: newTestLogger(&logBuf)})
	must(t, err)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeHTTP(ctx, ln) }()
	port := ln.Addr().(*net.TCPAddr).Port
	status, _ := post(t, fmt.Sprintf("http://127.0.0.1:%d", port), initBody, map[string]string{"Authorization": ""})
	cancel()
	<-done
	if status != http.StatusOK || !strings.Contains(logBuf.String(), "ANONYMOUS ACCESS FROM THE NETWORK") {
		t.Fatalf("forced anonymous remote: status %d, log %q", status, logBuf.String())
	}
}

func TestTokenWarnings(t *testing.T) {
	t.Setenv("AIRLOCK_TEST_TOKEN", "short")
	f := newFixture(t, "local")
	var logBuf syncbuf.Buffer
	srv, err := New(f.r, &Options{Logger: newTestLogger(&logBuf)})
	must(t, err)
	defer srv.Close()
	if logBuf.String() != "" {
		t.Fatalf("stdio takes no tokens, yet: %q", logBuf.String())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeHTTP(ctx, ln) }()
	for !strings.Contains(logBuf.String(), "is 5 characters") {
		select {
		case err := <-done:
			t.Fatal(err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	<-done
	if !strings.Contains(logBuf.String(), "is 5 characters") {
		t.Fatalf("no warning for a short token: %q", logBuf.String())
	}
	t.Setenv("AIRLOCK_TEST_TOKEN", "")
	logBuf.Reset()
	must(t, srv.Reload())
	if !strings.Contains(logBuf.String(), "unset or empty") {
		t.Fatalf("no warning for an unset token: %q", logBuf.String())
	}
	if strings.Contains(logBuf.String(), "short") {
		t.Fatal("the token itself was logged")
	}
}

func TestMalformedMessagesRefusedAndAudited(t *testing.T) {
	f, url := edgeServer(t, `{}`)
	batch := "[" + strings.TrimSuffix(strings.Repeat(`{"jsonrpc":"2.0","id":1,"method":"ping"},`, 1000), ",") + "]"
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	cases := []struct {
		name, body string
		hdr        map[string]string
		status     int
	}{
		{"invalid JSON", `{"jsonrpc":"2.0",`, nil, http.StatusBadRequest},
		{"binary garbage", "\x00\xff\xfe\x01garbage", nil, http.StatusBadRequest},
		{"deep nesting", deep, nil, http.StatusBadRequest},
		{"ping batch", batch, nil, http.StatusBadRequest},
		{"wrong content type", initBody, map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
		{"duplicate key in envelope", `{"jsonrpc":"2.0","id":1,"method":"initialize","method":"ping"}`, nil, http.StatusBadRequest},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, nil, http.StatusBadRequest},
		{"name of wrong type", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, nil, http.StatusBadRequest},
	}
	for _, tc := range cases {
		status, body := post(t, url, tc.body, tc.hdr)
		if status != tc.status {
			t.Errorf("%s: status %d, want %d", tc.name, status, tc.status)
		}
		if len(body) > 512 || strings.Contains(body, "Go struct") || strings.Contains(body, "json:") || strings.Contains(body, "garbage") {
			t.Errorf("%s: answer leaks or echoes: %q", tc.name, body)
		}
		if !strings.Contains(body, string(violation.MalformedMessage)) {
			t.Errorf("%s: answer has no code: %q", tc.name, body)
		}
	}
	if _, total := f.edgeRefusals(t, violation.MalformedMessage); total != len(cases) {
		t.Fatalf("MALFORMED_MESSAGE counted %d times, want %d", total, len(cases))
	}
	validClient(t, url)
}

// TestDuplicateKeysNeverRun: the last duplicate would win in mcp-go — a
// "name" pair runs run_pipeline where list_pools was shown, an argument
// pair reads ../x checked as ok.txt. Both are refused before any tool.
func TestDuplicateKeysNeverRun(t *testing.T) {
	f, url := edgeServer(t, `{}`)
	status, body := post(t, url, initBody, nil)
	if status != http.StatusOK {
		t.Fatalf("initialize: %d %s", status, body)
	}
	sid := sessionFromInit(t, url)
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_pools","name":"run_pipeline","arguments":{"pipeline":"count_rows"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_pool_file","arguments":{"pool":"alpha","path":"../x","path":"hello.txt"}}}`,
	} {
		status, body := post(t, url, msg, map[string]string{"Mcp-Session-Id": sid})
		if status != http.StatusBadRequest || !strings.Contains(body, "twice") {
			t.Fatalf("duplicate keys: %d %s", status, body)
		}
	}
	for _, r := range f.auditRecords(t) {
		if r.Tool == "run_pipeline" || r.Tool == "read_pool_file" {
			t.Fatalf("a tool ran: %+v", r)
		}
	}
}

func sessionFromInit(t *testing.T, url string) string {
	t.Helper()
	resp, _ := roundTrip(t, mcpRequest(t, http.MethodPost, url, strings.NewReader(initBody), "Bearer "+testToken))
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatal("no session id")
	}
	return sid
}

func TestOversizeBodyIs413(t *testing.T) {
	f, url := edgeServer(t, `{max_body_bytes: 65536}`)
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 50<<20) + `"}}`
	if status, _ := post(t, url, big, nil); status != http.StatusRequestEntityTooLarge {
		t.Fatalf("50 MB body with Content-Length: %d", status)
	}
	// Chunked (no Content-Length): read up to the bound, then refused.
	req, _ := http.NewRequest(http.MethodPost, url+PathStreamable, io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Fatalf("chunked 50 MB body: %d", resp.StatusCode)
		}
	}
	if _, total := f.edgeRefusals(t, violation.MessageTooLarge); total < 1 {
		t.Fatal("MESSAGE_TOO_LARGE not audited")
	}
	validClient(t, url)
}

func TestSlowBodyTimesOut(t *testing.T) {
	f, url := edgeServer(t, `{body_read_timeout_seconds: 1}`)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	must(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", testToken)
	stop := make(chan struct{})
	defer close(stop)
	go func() { // one byte every 300 ms, as a slowloris body would, for as long as it is let
		for {
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	// The body never completes and never pauses for a second: only a bound
	// on the whole body can answer, so the 408 is the verdict, not how soon
	// it came (the minute is a hang guard).
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	f.refused(t, "slow body", resp, err, http.StatusRequestTimeout, violation.RequestTimeout, 1)
}

func TestSilentConnectionsClosedAfterHeaderTimeout(t *testing.T) {
	_, url := edgeServer(t, `{read_header_timeout_seconds: 1}`)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	must(t, err)
	defer conn.Close()
	// Nothing but the header timeout can close a silent connection, so
	// its closing is the verdict (the minute is a hang guard).
	_ = conn.SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := conn.Read(make([]byte, 1)); err == nil || isTimeoutErr(err) {
		t.Fatalf("silent connection kept: %v", err)
	}
}

func isTimeoutErr(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestIdleConnectionsCannotStarveAClient: peers without a token hold
// thousands of idle connections from several addresses; a client with a
// token still initializes and calls.
func TestIdleConnectionsCannotStarveAClient(t *testing.T) {
	f, url := edgeServer(t, `{max_connections: 200, max_unauthenticated_per_address: 50}`)
	addr := strings.TrimPrefix(url, "http://")
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 600 {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(2+i%6))}}
		c, err := d.Dial("tcp", addr)
		must(t, err)
		conns = append(conns, c)
	}
	validClient(t, url)
	// What is still open is within the bounds.
	open := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); isTimeoutErr(err) {
			open++
		}
	}
	if open > 200 {
		t.Fatalf("%d idle connections still open, bound is 200", open)
	}
	if _, total := f.edgeRefusals(t, violation.ConnectionLimit); total < 400 {
		t.Fatalf("CONNECTION_LIMIT counted %d, want ≥ 400", total)
	}
}

// TestUnauthenticatedFloodIsAggregated: 2,000 requests without a token are
// a handful of audit records carrying the whole count, and a client with a
// token is served meanwhile.
func TestUnauthenticatedFloodIsAggregated(t *testing.T) {
	f, url := edgeServer(t, `{}`)
	before := len(f.auditRecords(t))
	var wg sync.WaitGroup
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	hc := &http.Client{Transport: tr}
	defer tr.CloseIdleConnections()
	for w := range 8 {
		wg.Go(func() {
			for range 250 {
				req, _ := http.NewRequest(http.MethodPost, url+PathStreamable, strings.NewReader(initBody))
				req.Header.Set("Content-Type", "application/json")
				if w%2 == 0 {
					req.Header.Set("Authorization", "Bearer wrong")
				}
				resp, err := hc.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized {
					t.Errorf("status %d", resp.StatusCode)
				}
			}
		})
	}
	validClient(t, url)
	wg.Wait()
	records, total := f.edgeRefusals(t, violation.Unauthenticated)
	if total != 2000 {
		t.Fatalf("UNAUTHENTICATED counted %d, want 2000", total)
	}
	if records > 4 {
		t.Fatalf("2,000 refusals made %d records; want ≤ 4 (first at once + count, per cause)", records)
	}
	if grown := len(f.auditRecords(t)) - before; grown > 20 {
		t.Fatalf("the trail grew by %d records", grown)
	}
}

func newTestLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }
