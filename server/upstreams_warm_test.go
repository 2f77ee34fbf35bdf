package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"

	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/internal/testkit/gobuild"
)

// Warm upstream sessions (issue 23 items 1 and 2): a stdio upstream's
// process lives across calls, one per upstream and runtime context, in the
// same sandbox as a cold one.

// warmFixture is the upstream test configuration with stdio upstreams of
// testdata/mcpwarm: mem (announces its changes) and quiet (declares no
// tools.listChanged), each tagged with a random argument that names its
// processes in /proc; every tool of both is approved. A second principal
// (role mcp-http-b) shares the mcp policy.
func warmFixture(t testing.TB) (f *fixture, tag string) {
	t.Helper()
	w := newWarmSetup(t)
	return w.f, w.tag
}

// warmSetup is warmFixture's fixture, the tag, the fixture binary and the
// HTTP test upstream (up) beside it.
type warmSetup struct {
	f        *fixture
	tag, bin string
	http     *testUpstream
}

func newWarmSetup(t testing.TB) *warmSetup {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the sandbox needs root")
	}
	bin := buildWarm(t)
	tag := randomTag(t)
	t.Setenv("WARM_SECRET", "warm-secret-value-0123456789")
	cfg, u := upstreamConfig(t, "mcper", fmt.Sprintf(`  - id: mem
    command: [%[1]s, -tag=%[2]s]
    read_only: [%[3]s]
    env: {WARM_SECRET: {env: WARM_SECRET}}
    timeout_ms: 20000
  - id: quiet
    command: [%[1]s, -tag=%[2]s, -no-list-changed]
    read_only: [%[3]s]
    timeout_ms: 20000
`, bin, tag, filepath.Dir(bin)))
	cfg = strings.Replace(cfg, `"mcp.probe.*", "mcp.dup.*"]`, `"mcp.probe.*", "mcp.dup.*", "mcp.mem.*", "mcp.quiet.*"]`, 1)
	cfg = strings.Replace(cfg, "roles:\n", `roles:
  mcp-http-b:
    policy: mcp
    pools: [alpha]
    initial_phase: execution
    tokens: [{env: AIRLOCK_TEST_TOKEN_MCP_B}]
`, 1)
	f := newFixtureConfig(t, cfg)
	op, err := operator.Open(f.state, false)
	must(t, err)
	defer op.Close()
	op.UseSandboxTrampoline(trampoline)
	for _, up := range []string{"mem", "quiet"} {
		if errs := op.RefreshUpstreams(context.Background(), f.cfg, up, "tester"); len(errs) > 0 {
			t.Fatalf("listing %s: %v", up, errs)
		}
		pins, err := op.UpstreamPins(context.Background(), up)
		must(t, err)
		for _, p := range pins {
			_, err := op.ApproveUpstreamTool(context.Background(), up, p.Tool, p.SeenDigest, "tester")
			must(t, err)
		}
	}
	return &warmSetup{f: f, tag: tag, bin: bin, http: u}
}

// buildWarm builds testdata/mcpwarm where the sandbox user can read it.
func buildWarm(t testing.TB) string { return buildTestdata(t, "mcpwarm") }

// buildTestdata builds ./testdata/name into a directory the sandbox user
// can read, removed when the test ends.
func buildTestdata(t testing.TB, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "airlock-"+name+"-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, name)
	gobuild.Build(t, bin, "./testdata/"+name)
	return bin
}

func randomTag(t testing.TB) string {
	b := make([]byte, 8)
	_, err := rand.Read(b)
	must(t, err)
	return hex.EncodeToString(b)
}

// tagged are the pids of the processes whose arguments carry -tag=tag (the
// upstream itself: the sandbox's trampoline execs it as its PID 1, so the
// host pid is the one the sandbox waits for).
func tagged(t *testing.T, tag string) []int {
	t.Helper()
	dirs, err := os.ReadDir("/proc")
	must(t, err)
	var pids []int
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte("\x00-tag="+tag)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// need is mcpNeed for upstream's tool.
func upstreamNeed(upstream, tool string, args map[string]any) map[string]any {
	n := mcpNeed(tool, args)
	n["parameters"].(map[string]any)["upstream"] = upstream
	return n
}

// TestWarmStateStaysInItsContext: what a stdio upstream keeps survives
// between two calls of one context (one process, warm), and no other
// context of the same principal, no other principal, sees any of it: each
// gets a process of its own.
func TestWarmStateStaysInItsContext(t *testing.T) {
	t.Setenv("AIRLOCK_TEST_TOKEN_MCP", "warm-token-a-0123456789abcdef")
	t.Setenv("AIRLOCK_TEST_TOKEN_MCP_B", "warm-token-b-0123456789abcdef")
	f, tag := warmFixture(t)
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	a := bearerClient(t, ts.URL, "warm-token-a-0123456789abcdef")
	callOK(t, a, "declare_need", upstreamNeed("mem", "set", map[string]any{"key": "k", "value": "alpha-private"}))
	if got := text(callOK(t, a, "declare_need", upstreamNeed("mem", "get", map[string]any{"key": "k"}))); !strings.Contains(got, "value: alpha-private") {
		t.Fatalf("the same context lost its upstream state: %s", got)
	}
	if n := len(tagged(t, tag)); n != 1 {
		t.Fatalf("%d upstream processes after two calls of one context, want 1 (warm)", n)
	}

	parent := contexts.DefaultID("mcp-http/env:AIRLOCK_TEST_TOKEN_MCP", "mcp-http")
	_, handle := f.createChild(t, operator.ChildSpec{Parent: parent, Phase: contexts.PhaseExecution})
	child := bearerClientHeaders(t, ts.URL, map[string]string{"Authorization": "Bearer warm-token-a-0123456789abcdef", HeaderContext: handle})
	b := bearerClient(t, ts.URL, "warm-token-b-0123456789abcdef")
	for name, c := range map[string]*client.Client{"another context of the principal": child, "another principal": b, "the stdio principal": f.connect(t)} {
		if got := text(callOK(t, c, "declare_need", upstreamNeed("mem", "get", map[string]any{"key": "k"}))); !strings.Contains(got, "value: (none)") {
			t.Errorf("%s sees the upstream state of another: %s", name, got)
		}
	}
	if n := len(tagged(t, tag)); n != 4 {
		t.Fatalf("%d upstream processes for four contexts, want 4", n)
	}
}

// TestWarmCrashRestartedAndAudited: a warm upstream whose process exits by
// itself fails the call it was serving (UPSTREAM_UNAVAILABLE), is audited
// as upstream.exited with its exit status and its last stderr lines (its
// environment's secret scrubbed) before that call's answer, and the next
// call runs on a new process (its state is gone).
func TestWarmCrashRestartedAndAudited(t *testing.T) {
	f, tag := warmFixture(t)
	c := f.connect(t)
	callOK(t, c, "declare_need", upstreamNeed("mem", "set", map[string]any{"key": "k", "value": "v"}))
	before := tagged(t, tag)
	if res := call(t, c, "declare_need", upstreamNeed("mem", "crash", nil)); code(res) != "UPSTREAM_UNAVAILABLE" {
		t.Fatalf("a call whose upstream crashed: %s", text(res))
	}
	var exited []string
	for _, r := range f.auditRecords(t) {
		if r.Capability == "upstream.exited" {
			exited = append(exited, r.Reason+" "+string(r.Extra))
		}
	}
	if len(exited) != 1 || !strings.Contains(exited[0], "exit 3") || !strings.Contains(exited[0], "mcpwarm: last words") ||
		!strings.Contains(exited[0], `"scope":"context:`) {
		t.Fatalf("upstream.exited records: %q", exited)
	}
	if strings.Contains(exited[0], "warm-secret-value") {
		t.Fatalf("the upstream's secret reached the audit: %s", exited[0])
	}
	if got := text(callOK(t, c, "declare_need", upstreamNeed("mem", "get", map[string]any{"key": "k"}))); !strings.Contains(got, "value: (none)") {
		t.Fatalf("after the crash: %s", got)
	}
	if after := tagged(t, tag); len(before) != 1 || len(after) != 1 || after[0] == before[0] {
		t.Fatalf("processes before the crash %v, after the restart %v", before, after)
	}
	// The operator's side sees it through the store (upstreams status).
	st, err := f.operator(t).UpstreamStatus(context.Background(), f.cfg)
	must(t, err)
	for _, s := range st {
		if s.Upstream == "mem" && (s.Warm != 1 || s.Restarts != 1 || !strings.Contains(s.LastError, "exit 3") || s.Transport != "stdio") {
			t.Fatalf("status of mem: %+v", s)
		}
	}
}

// TestWarmRugPullCaughtBeforeUse: a warm session whose upstream changes a
// definition between two calls is refused at the second, before the tool
// is called (UPSTREAM_DEFINITION_CHANGED), whether the upstream announces
// the change (list_changed marks the session for a new listing) or
// declares no tools.listChanged (listed before every call).
func TestWarmRugPullCaughtBeforeUse(t *testing.T) {
	f, _ := warmFixture(t)
	for _, up := range []string{"mem", "quiet"} {
		t.Run(up, func(t *testing.T) {
			c := f.connect(t)
			callOK(t, c, "declare_need", upstreamNeed(up, "get", map[string]any{"key": "k"}))
			callOK(t, c, "declare_need", upstreamNeed(up, "rug", nil))
			if res := call(t, c, "declare_need", upstreamNeed(up, "get", map[string]any{"key": "k"})); code(res) != "UPSTREAM_DEFINITION_CHANGED" {
				t.Fatalf("the changed tool was called: %s", text(res))
			}
		})
	}
}

// TestKillSwitchStopsWarmUpstream: tripping the kill switch (from another
// process, as `airlock kill` does) stops every warm upstream process of a
// serving Airlock no later than its next call's refusal: the process, by
// pid, is gone when that refusal returns.
func TestKillSwitchStopsWarmUpstream(t *testing.T) {
	f, tag := warmFixture(t)
	c := f.connect(t)
	callOK(t, c, "declare_need", upstreamNeed("mem", "set", map[string]any{"key": "k", "value": "v"}))
	pids := tagged(t, tag)
	if len(pids) != 1 {
		t.Fatalf("warm processes: %v", pids)
	}
	_, err := operator.TripKillSwitch(f.state, "tester", "incident")
	must(t, err)
	if res := call(t, c, "list_pools", nil); code(res) != "KILL_SWITCH_ENGAGED" {
		t.Fatalf("after the kill switch: %s", text(res))
	}
	if left := tagged(t, tag); len(left) != 0 {
		t.Fatalf("warm upstream processes %v outlived the kill switch", left)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pids[0])); err == nil {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pids[0]))
		if bytes.Contains(b, []byte(tag)) {
			t.Fatalf("process %d still runs", pids[0])
		}
	}
}

// TestWarmUpstreamConfined: a warm upstream's process is as confined at
// its second call as a cold one at its first: no connection to the host's
// loopback, no view of the state directory, only its configured
// environment — and it is one process across both calls.
func TestWarmUpstreamConfined(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the sandbox needs root")
	}
	bin := buildProbe(t)
	tag := randomTag(t)
	ln, accepted := countingListener(t, "127.0.0.1:0")
	f, _ := upstreamFixtureWith(t, "mcper", fmt.Sprintf(`  - id: probe
    command: [%s, -tag=%s]
    read_only: [%s]
    timeout_ms: 20000
`, bin, tag, filepath.Dir(bin)))
	approveProbe(t, f, "probe", "probe")
	c := f.connect(t)
	for i := range 2 {
		out := text(callOK(t, c, "declare_need", upstreamNeed("probe", "probe", map[string]any{"addr": ln.Addr().String(), "path": f.state})))
		if !strings.Contains(out, "dial: refused") || !strings.Contains(out, "read: refused") || strings.Contains(out, "AIRLOCK_") {
			t.Fatalf("call %d: the warm upstream reached out: %s", i+1, out)
		}
	}
	if n := len(tagged(t, tag)); n != 1 {
		t.Fatalf("%d probe processes after two calls, want 1 (warm)", n)
	}
	if accepted.Load() != 0 {
		t.Fatalf("the host listener accepted %d connections", accepted.Load())
	}
}
