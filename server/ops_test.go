package server

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/airlock-dev/airlock/internal/audit/witness"
	"github.com/airlock-dev/airlock/internal/execution/runner"
	statedir "github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/kit/metrics"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// opsFixture is testConfig served by ServeHTTP on a real loopback
// listener, with metrics, the role "runner" given a token (to run a
// pipeline over HTTP) and httpSettings in transports.http.
type opsFixture struct {
	*fixture
	url string
	srv *Server
}

const runnerTokenEnv = "AIRLOCK_TEST_TOKEN_RUNNER"

func newOpsFixture(t *testing.T, httpSettings string, extraYAML ...string) *opsFixture {
	t.Helper()
	setTokens(t)
	t.Setenv(runnerTokenEnv, tokenOf("runner"))
	cfg := withHTTP(t, fmt.Sprintf(testConfig, "local"), httpSettings)
	for _, r := range [][2]string{
		{"  runner: {policy: pipes, pools: [alpha, delta], initial_phase: execution}\n",
			"  runner: {policy: pipes, pools: [alpha, delta], initial_phase: execution, tokens: [{env: " + runnerTokenEnv + "}]}\n"},
	} {
		if !strings.Contains(cfg, r[0]) {
			t.Fatalf("testConfig moved: no %q", r[0])
		}
		cfg = strings.Replace(cfg, r[0], r[1], 1)
	}
	cfg += strings.Join(extraYAML, "")
	f := newFixtureConfig(t, cfg)
	// A runner and server of their own, reporting into one registry, as
	// serve --http builds them.
	m := metrics.New()
	g := f.withRunner(t, runner.Options{Metrics: m}, &Options{Metrics: m})
	return &opsFixture{fixture: g, url: serveLoopback(t, g.srv), srv: g.srv}
}

func (o *opsFixture) client(t *testing.T, role string) *client.Client {
	t.Helper()
	return bearerClient(t, o.url, tokenOf(role))
}

func get(t *testing.T, url string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	must(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, b := roundTrip(t, req)
	return resp.StatusCode, string(b)
}

// series sums the samples of name whose labels include every pair of
// want ("k=v"); found is false when no sample matched.
func series(body, name string, want ...string) (sum float64, found bool) {
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		if sp < 0 {
			continue
		}
		id, val := line[:sp], line[sp+1:]
		metric, labels, _ := strings.Cut(id, "{")
		if metric != name {
			continue
		}
		ok := true
		for _, w := range want {
			k, v, _ := strings.Cut(w, "=")
			if !strings.Contains("{"+labels, "{"+k+`="`+v+`"`) && !strings.Contains(labels, ","+k+`="`+v+`"`) {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			continue
		}
		sum, found = sum+f, true
	}
	return sum, found
}

// TestMetricsMoveAfterRealCalls (issue 12 item 2): a real server on
// loopback, driven by real MCP clients over HTTP, and its /metrics: calls
// by tool, decision, outcome and violation; latency per call and per
// runner step; group commits; a sandboxed pipeline run; open sessions and
// a pending approval — each series moves by what the calls did.
func TestMetricsMoveAfterRealCalls(t *testing.T) {
	o := newOpsFixture(t, "")
	origin := newOrigin(t)
	status, before := get(t, o.url+PathMetrics, nil)
	if status != http.StatusOK {
		t.Fatalf("GET /metrics from loopback: %d %s", status, before)
	}
	if n, _ := series(before, "airlock_calls_total"); n != 0 {
		t.Fatalf("calls before any call: %v", n)
	}
	c := o.client(t, "runner")
	call(t, c, "list_pools", nil)
	call(t, c, "read_pool_file", map[string]any{"pool": "alpha", "path": "hello.txt"})
	if res := call(t, c, "read_pool_file", map[string]any{"pool": "alpha", "path": "tampered.txt"}); !res.IsError {
		t.Fatal("reading a tampered file succeeded")
	}
	callOK(t, c, "run_pipeline", map[string]any{"pipeline": "count_rows"})
	if res := call(t, c, "run_pipeline", map[string]any{"pipeline": "danger_wipe"}); code(res) != string(violation.PolicyDenied) {
		t.Fatalf("danger_wipe: %s", text(res))
	}
	op := o.client(t, "web-operator")
	callOK(t, op, "declare_need", need(origin.URL+"/gated/x"))

	_, after := get(t, o.url+PathMetrics, nil)
	checks := []struct {
		name   string
		labels []string
		min    float64
		max    float64
	}{
		{"airlock_calls_total", []string{"tool=list_pools", "decision=allow", "outcome=ok", "violation="}, 1, 1},
		{"airlock_calls_total", []string{"tool=read_pool_file", "outcome=ok"}, 1, 1},
		{"airlock_calls_total", []string{"tool=read_pool_file", "outcome=violation", "violation=INTEGRITY_FAILURE"}, 1, 1},
		{"airlock_calls_total", []string{"tool=run_pipeline", "decision=allow", "outcome=ok"}, 1, 1},
		{"airlock_calls_total", []string{"tool=run_pipeline", "decision=deny", "outcome=denied", "violation=POLICY_DENIED"}, 1, 1},
		{"airlock_calls_total", []string{"tool=declare_need"}, 1, 1},
		{"airlock_call_duration_seconds_count", []string{"tool=read_pool_file"}, 2, 2},
		{"airlock_runner_step_duration_seconds_count", []string{"step=execute"}, 5, 5}, // all but the denial
		{"airlock_runner_step_duration_seconds_count", []string{"step=audit"}, 6, 6},
		{"airlock_audit_commit_records_sum", nil, 6, 1e9}, // the calls, starts and session opens
		{"airlock_audit_commit_duration_seconds_count", nil, 1, 1e9},
		{"airlock_sandbox_runs_total", []string{"result=ok"}, 1, 1},
		{"airlock_sessions_open", nil, 2, 2},
		{"airlock_approvals_pending", nil, 1, 1},
		{"airlock_http_quick_calls_in_flight", nil, 0, 0}, // every call has ended
		{"airlock_http_quick_calls_waiting", nil, 0, 0},
	}
	for _, ch := range checks {
		got, found := series(after, ch.name, ch.labels...)
		if !found || got < ch.min || got > ch.max {
			t.Errorf("%s%v = %v (found %v), want %v..%v", ch.name, ch.labels, got, found, ch.min, ch.max)
		}
	}
	if t.Failed() {
		t.Logf("scrape:\n%s", after)
	}
	// No label carries an agent's value: the tampered path is nowhere.
	if strings.Contains(after, "tampered") || strings.Contains(after, "/gated/") {
		t.Error("an argument value reached /metrics")
	}
}

// TestMetricsAccess (issue 12 item 2): /metrics answers a loopback peer;
// from another address it needs a bearer token of metrics_role — no
// token, the anonymous role, or another role's token is refused and
// audited; without metrics_role nobody from the network reads it. A
// cross-site Origin is refused everywhere. /healthz and /readyz answer
// anyone. (The handler is the server's own; only the peer address is set
// by the test, as a real remote peer would have it.)
func TestMetricsAccess(t *testing.T) {
	withRole := newOpsFixture(t, "metrics_role: web-operator, anonymous_role: web-operator")
	without := newOpsFixture(t, "")
	const remote = "203.0.113.7:40000"
	tests := []struct {
		name   string
		o      *opsFixture
		path   string
		peer   string
		header map[string]string
		status int
		code   violation.Code // the refusal recorded, if any
	}{
		{"loopback, no token", without, PathMetrics, "127.0.0.1:5000", nil, http.StatusOK, ""},
		{"remote, no metrics_role", without, PathMetrics, remote, map[string]string{"Authorization": "Bearer " + tokenOf("web-operator")}, http.StatusForbidden, violation.InsufficientScope},
		{"remote, metrics_role token", withRole, PathMetrics, remote, map[string]string{"Authorization": "Bearer " + tokenOf("web-operator")}, http.StatusOK, ""},
		{"remote, anonymous role", withRole, PathMetrics, remote, nil, http.StatusUnauthorized, violation.Unauthenticated},
		{"remote, bad token", withRole, PathMetrics, remote, map[string]string{"Authorization": "Bearer nope-nope-nope-nope"}, http.StatusUnauthorized, violation.Unauthenticated},
		{"remote, other role", withRole, PathMetrics, remote, map[string]string{"Authorization": "Bearer " + tokenOf("agent")}, http.StatusForbidden, violation.InsufficientScope},
		{"cross-site origin", without, PathMetrics, "127.0.0.1:5000", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden, violation.OriginRefused},
		{"healthz, remote", without, PathHealthz, remote, nil, http.StatusOK, ""},
		{"readyz, remote", without, PathReadyz, remote, nil, http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tt.path, nil)
			req.RemoteAddr = tt.peer
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			tt.o.srv.Handler().ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Fatalf("%s from %s: %d %s, want %d", tt.path, tt.peer, rec.Code, rec.Body, tt.status)
			}
			if tt.status == http.StatusOK && tt.path == PathMetrics && !strings.Contains(rec.Body.String(), "airlock_audit_commit_records") {
				t.Fatalf("no series: %s", rec.Body)
			}
			if tt.code != "" && strings.Contains(rec.Body.String(), "airlock_") {
				t.Fatalf("refused but served series: %s", rec.Body)
			}
		})
	}
	// Every refusal is in the audit trail (aggregated per window, flushed on close).
	withRole.srv.Close()
	without.srv.Close()
	for _, w := range []struct {
		o    *opsFixture
		code violation.Code
		n    int
	}{
		{without, violation.InsufficientScope, 1}, {without, violation.OriginRefused, 1},
		{withRole, violation.Unauthenticated, 2}, {withRole, violation.InsufficientScope, 1},
	} {
		if _, total := w.o.edgeRefusals(t, w.code); total != w.n {
			t.Errorf("%s refusals audited: %d, want %d", w.code, total, w.n)
		}
	}
}

// TestReadyzTurns503WhenTheStoreCannotWrite (issue 12 item 2): /readyz is
// 200 on a healthy server, 503 while another process holds the store's
// write lock (no call could be audited), and 200 again once it lets go;
// /healthz stays 200 throughout (the process is up). The 503 says only
// "not ready": the cause is logged, not served.
func TestReadyzTurns503WhenTheStoreCannotWrite(t *testing.T) {
	o := newOpsFixture(t, "")
	if status, body := get(t, o.url+PathReadyz, nil); status != http.StatusOK || body != "ready\n" {
		t.Fatalf("healthy: %d %q", status, body)
	}
	lock, err := sql.Open("sqlite", "file:"+filepath.Join(o.state, statedir.DBFile))
	must(t, err)
	defer lock.Close()
	conn, err := lock.Conn(context.Background())
	must(t, err)
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	// The lock is held until the ROLLBACK below: an answer at all, 503,
	// shows the probe is bounded (how soon is the machine's, not a verdict).
	status, body := get(t, o.url+PathReadyz, nil)
	if status != http.StatusServiceUnavailable || body != "not ready\n" {
		t.Fatalf("store locked: %d %q, want 503", status, body)
	}
	if status, _ := get(t, o.url+PathHealthz, nil); status != http.StatusOK {
		t.Fatalf("/healthz while not ready: %d", status)
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute) // a hang guard
	for {
		status, _ := get(t, o.url+PathReadyz, nil)
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d after the lock was released", status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReadyzTurns503WhenAWitnessMirrorIsGone (issue 12 item 2): a
// witness mirror that went away (an unmounted share, a deleted file) makes
// the server not ready: checkpoints would no longer reach it.
func TestReadyzTurns503WhenAWitnessMirrorIsGone(t *testing.T) {
	mirror := filepath.Join(t.TempDir(), "mirror.log")
	o := newOpsFixture(t, "", "audit: {witness_mirrors: ["+mirror+"]}\n")
	if status, _ := get(t, o.url+PathReadyz, nil); status != http.StatusOK {
		t.Fatalf("healthy: %d", status)
	}
	must(t, os.Remove(mirror))
	if status, _ := get(t, o.url+PathReadyz, nil); status != http.StatusServiceUnavailable {
		t.Fatalf("mirror gone: %d, want 503", status)
	}
	err := o.r.Ready(context.Background())
	if !errors.Is(err, runner.ErrNotReady) || !errors.Is(err, witness.ErrUnreachable) {
		t.Fatalf("Ready = %v, want ErrNotReady wrapping witness.ErrUnreachable", err)
	}
}
