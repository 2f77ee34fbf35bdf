package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/notify"
	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/kit/metrics"
	"github.com/airlock-dev/airlock/internal/testkit/syncbuf"
)

// TestWebhooksForPendingAndExpiredApprovals: a need that waits for an
// operator is announced to the webhook once (signed), not on every poll;
// when it runs out undecided the webhook hears that too, and the expiry is
// an audit record naming the declaration.
func TestWebhooksForPendingAndExpiredApprovals(t *testing.T) {
	var mu sync.Mutex
	var events []notify.Event
	var sigOK bool
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var e notify.Event
		_ = json.Unmarshal(b, &e)
		mu.Lock()
		events = append(events, e)
		sigOK = r.Header.Get(notify.SignatureHeader) == notify.Sign([]byte("s3cret-for-the-hook"), b)
		mu.Unlock()
	}))
	defer hook.Close()
	t.Setenv("AIRLOCK_TEST_HOOK_SECRET", "s3cret-for-the-hook")
	o := newOrigin(t)
	cfg := fmt.Sprintf(testConfig, "fetcher")
	cfg = strings.Replace(cfg, "comm:\n", "notifications:\n  webhooks: [{url: \""+hook.URL+"\", secret_env: AIRLOCK_TEST_HOOK_SECRET}]\ncomm:\n  declaration_ttl_seconds: 1\n", 1)
	f := newFixtureConfig(t, cfg)
	c := f.connect(t)
	res := callOK(t, c, "declare_need", need(o.URL+"/gated/report?access=1"))
	id := structured(t, res)["declaration_id"].(string)
	collect(t, c, id) // a poll: no second event
	wait := func(n int) []notify.Event {
		deadline := time.Now().Add(time.Minute) // a hang guard
		for {
			mu.Lock()
			got := append([]notify.Event(nil), events...)
			mu.Unlock()
			if len(got) >= n || time.Now().After(deadline) {
				return got
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	got := wait(1)
	if len(got) != 1 || got[0].Event != notify.ApprovalPending || got[0].DeclarationID != id || !strings.Contains(got[0].Target, "/gated/report") || !sigOK {
		t.Fatalf("pending event: %+v (signature ok %v)", got, sigOK)
	}
	time.Sleep(1100 * time.Millisecond)
	if n := f.r.ExpireDeclarations(context.Background()); n != 1 {
		t.Fatalf("expired %d", n)
	}
	got = wait(2)
	if len(got) != 2 || got[1].Event != notify.ApprovalExpired || got[1].DeclarationID != id {
		t.Fatalf("expiry event: %+v", got)
	}
	var audited bool
	for _, r := range f.auditRecords(t) {
		audited = audited || (r.Capability == "declaration.expire" && strings.Contains(string(r.Extra), id))
	}
	if !audited {
		t.Fatal("the expiry is not an audit record naming the declaration")
	}
}

// The command hook (notifications.commands, issue 12 item 5) runs only in
// the sandbox: these tests drive a real server, a real sandbox and real
// hook programs, and read what each hook printed from the log line its
// delivery leaves (the hook has no other way out: no network, no writable
// host path).

// hookFixture is testConfig with a 1 s declaration TTL and the given
// command hooks, served by a runner whose logs (JSON, debug) and metrics
// are captured.
type hookFixture struct {
	*fixture
	c    *client.Client
	logs *syncbuf.Buffer
	m    *metrics.Metrics
}

func newHookFixture(t *testing.T, hooks string) *hookFixture {
	t.Helper()
	cfg := fmt.Sprintf(testConfig, "fetcher")
	cfg = strings.Replace(cfg, "comm:\n", "notifications:\n  commands:\n"+hooks+"comm:\n  declaration_ttl_seconds: 1\n", 1)
	f := newFixtureConfig(t, cfg)
	hf := &hookFixture{logs: &syncbuf.Buffer{}, m: metrics.New()}
	log := slog.New(slog.NewJSONHandler(hf.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	hf.fixture = f.withRunner(t, runner.Options{Logger: log, Metrics: hf.m}, &Options{Logger: log})
	hf.c = hf.connect(t)
	return hf
}

// hookLine is one log line a hook's delivery left.
type hookLine struct {
	Msg    string `json:"msg"`
	Hook   string `json:"hook"`
	Stdout string `json:"stdout"`
	Exit   int    `json:"exit"`
}

// lines returns the log lines with message msg, waiting up to d for at
// least n of them.
func (hf *hookFixture) lines(t *testing.T, msg string, n int, d time.Duration) []hookLine {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		var got []hookLine
		for l := range strings.SplitSeq(hf.logs.String(), "\n") {
			var h hookLine
			if json.Unmarshal([]byte(l), &h) == nil && h.Msg == msg {
				got = append(got, h)
			}
		}
		if len(got) >= n || time.Now().After(deadline) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// counter reads airlock_notifications_total{sink="command",outcome=…}.
func (hf *hookFixture) counter(t *testing.T, outcome string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	hf.m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	prefix := `airlock_notifications_total{outcome="` + outcome + `",sink="command"} `
	for l := range strings.SplitSeq(rec.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			return v
		}
	}
	return "0"
}

// declareGated declares a need the policy sends to an operator and returns
// its id. (That no hook is on the call's path is notify's
// TestSendNeverBlocks and TestSinksDoNotWaitForEachOther, decided without
// a clock; a "took over 2 s" check here failed on loaded machines.)
func (hf *hookFixture) declareGated(t *testing.T) string {
	t.Helper()
	o := newOrigin(t)
	res := callOK(t, hf.c, "declare_need", need(o.URL+"/gated/report?access=1"))
	return structured(t, res)["declaration_id"].(string)
}

// expire waits out the 1 s TTL and expires the declaration.
func (hf *hookFixture) expire(t *testing.T) {
	t.Helper()
	time.Sleep(1100 * time.Millisecond)
	if n := hf.r.ExpireDeclarations(context.Background()); n != 1 {
		t.Fatalf("expired %d declarations, want 1", n)
	}
}

func decodeEvent(t *testing.T, stdout string) notify.Event {
	t.Helper()
	var e notify.Event
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &e); err != nil {
		t.Fatalf("the hook's stdin was not the event's JSON body: %q (%v)", stdout, err)
	}
	return e
}

// TestCommandHookSeesPendingAndExpired: a hook hears, on stdin, the body a
// webhook gets — approval.pending when the agent's need waits for an
// operator, approval.expired when it runs out — and each delivery is
// logged and counted.
func TestCommandHookSeesPendingAndExpired(t *testing.T) {
	hf := newHookFixture(t, "    - {id: echo, argv: [/bin/sh, -c, 'cat; echo']}\n")
	id := hf.declareGated(t)
	got := hf.lines(t, "command hook ran", 1, 15*time.Second)
	if len(got) != 1 {
		t.Fatalf("hook runs: %+v\nlog:\n%s", got, hf.logs)
	}
	e := decodeEvent(t, got[0].Stdout)
	if e.Event != notify.ApprovalPending || e.DeclarationID != id || !strings.Contains(e.Target, "/gated/report") || got[0].Hook != "echo" {
		t.Fatalf("pending event: %+v", e)
	}
	if strings.Contains(got[0].Stdout, "What does the page say?") {
		t.Fatal("the hook saw the agent's justification text")
	}
	hf.expire(t)
	got = hf.lines(t, "command hook ran", 2, 15*time.Second)
	if len(got) != 2 {
		t.Fatalf("hook runs: %+v", got)
	}
	if e := decodeEvent(t, got[1].Stdout); e.Event != notify.ApprovalExpired || e.DeclarationID != id {
		t.Fatalf("expiry event: %+v", e)
	}
	if v := hf.counter(t, "delivered"); v != "2" {
		t.Fatalf("delivered counter %s, want 2", v)
	}
}

// TestCommandHookTimeoutThenNextEvent: a hook that hangs is killed at its
// timeout (each of its three attempts, with its whole PID namespace), the
// failure is logged and counted, the agent's call never waits for it, and
// the next event is still delivered.
func TestCommandHookTimeoutThenNextEvent(t *testing.T) {
	// The hanging process's argument is this run's own, so a make test
	// running beside this one (its copy of this test) is not mistaken
	// for ours below.
	hang := fmt.Sprintf("612.%06d", os.Getpid()%1000000)
	hook := `b=$(cat); case "$b" in *approval.pending*) exec sleep ` + hang + `;; esac; printf '%s' "$b"`
	hf := newHookFixture(t, "    - {id: hang, timeout_ms: 1000, argv: [/bin/sh, -c, '"+strings.ReplaceAll(hook, "'", "''")+"']}\n")
	id := hf.declareGated(t)
	hf.expire(t) // queued behind the hanging delivery
	got := hf.lines(t, "command hook ran", 1, 30*time.Second)
	if len(got) != 1 {
		t.Fatalf("the event after a hanging one was not delivered: %+v\nlog:\n%s", got, hf.logs)
	}
	if e := decodeEvent(t, got[0].Stdout); e.Event != notify.ApprovalExpired || e.DeclarationID != id {
		t.Fatalf("expiry event: %+v", e)
	}
	if kills := hf.lines(t, "command hook killed at its timeout", 3, time.Second); len(kills) != 3 {
		t.Fatalf("%d kills at the timeout, want 3 (one per attempt)", len(kills))
	}
	if n := len(hf.lines(t, "command not delivered", 1, time.Second)); n != 1 {
		t.Fatalf("%d 'command not delivered' lines, want 1", n)
	}
	if v := hf.counter(t, "timeout"); v != "1" {
		t.Fatalf("timeout counter %s, want 1", v)
	}
	if v := hf.counter(t, "delivered"); v != "1" {
		t.Fatalf("delivered counter %s, want 1", v)
	}
	// Nothing of the hanging hook outlives its kill.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && string(b) == "sleep\x00"+hang+"\x00" {
			t.Fatalf("the hanging hook still runs (%s)", p)
		}
	}
}

// hookProbe tries a TCP connection to each address of $ADDRS and to list
// and read the state directory $STATE, and records each result.
const hookProbe = `cat >/dev/null
for a in $ADDRS; do
  if (echo probe > "/dev/tcp/${a%:*}/${a##*:}") 2>/dev/null; then echo "NET $a reached"; else echo "NET $a refused"; fi
done
if ls "$STATE" >/dev/null 2>&1 || cat "$STATE/airlock.db" >/dev/null 2>&1; then echo "STATE reached"; else echo "STATE denied"; fi
`

// TestCommandHookConfined: a hook cannot reach the network (a listener on
// the host, on loopback and on the host's own address, sees no connection)
// or the state directory — while the same probe run outside the sandbox
// reaches both, so the probe is able to tell. Its variables come from the
// hook's env (token sources read at each delivery).
func TestCommandHookConfined(t *testing.T) {
	ln, accepted := countingListener(t, "0.0.0.0:0")
	port := ln.Addr().(*net.TCPAddr).Port
	addrs := []string{fmt.Sprintf("127.0.0.1:%d", port)}
	if ifAddrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range ifAddrs {
			if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil && !ip.IP.IsLoopback() {
				addrs = append(addrs, fmt.Sprintf("%s:%d", ip.IP, port))
				break
			}
		}
	}
	scripts := t.TempDir()
	must(t, os.Chmod(scripts, 0o755))
	probe := filepath.Join(scripts, "probe.sh")
	must(t, os.WriteFile(probe, []byte(hookProbe), 0o644))
	hf := newHookFixture(t, fmt.Sprintf("    - {id: probe, events: [approval.pending], argv: [/bin/bash, %s], read_only: [%s],\n"+
		"       env: {ADDRS: {env: AIRLOCK_TEST_HOOK_ADDRS}, STATE: {env: AIRLOCK_TEST_HOOK_STATE}}}\n", probe, probe))
	t.Setenv("AIRLOCK_TEST_HOOK_ADDRS", strings.Join(addrs, " "))
	t.Setenv("AIRLOCK_TEST_HOOK_STATE", hf.state)

	// The control: outside the sandbox the probe reaches both.
	ctl := exec.Command("/bin/bash", probe)
	ctl.Env = []string{"ADDRS=" + strings.Join(addrs, " "), "STATE=" + hf.state}
	out, err := ctl.Output()
	must(t, err)
	if strings.Count(string(out), "reached") != len(addrs)+1 {
		t.Fatalf("the probe cannot tell outside the sandbox either:\n%s", out)
	}
	for accepted.Load() < int64(len(addrs)) {
		time.Sleep(10 * time.Millisecond)
	}
	accepted.Store(0)

	hf.declareGated(t)
	got := hf.lines(t, "command hook ran", 1, 15*time.Second)
	if len(got) != 1 {
		t.Fatalf("probe runs: %+v\nlog:\n%s", got, hf.logs)
	}
	for _, a := range addrs {
		if !strings.Contains(got[0].Stdout, "NET "+a+" refused") {
			t.Errorf("the hook reached %s:\n%s", a, got[0].Stdout)
		}
	}
	if !strings.Contains(got[0].Stdout, "STATE denied") {
		t.Errorf("the hook reached the state directory:\n%s", got[0].Stdout)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the host listener accepted %d connections from the hook", n)
	}
}

// TestDocumentedHookRuns: the hook README and docs/notify-hooks.yaml show
// runs as documented — its line lands in the log with the event.
func TestDocumentedHookRuns(t *testing.T) {
	doc, err := config.Load("../docs/notify-hooks.yaml")
	must(t, err)
	argv, err := json.Marshal(doc.Notify.Commands[0].Argv)
	must(t, err)
	hf := newHookFixture(t, "    - {id: documented, argv: "+string(argv)+"}\n")
	id := hf.declareGated(t)
	got := hf.lines(t, "command hook ran", 1, 15*time.Second)
	if len(got) != 1 || !strings.HasPrefix(got[0].Stdout, "airlock approval event: {") || !strings.Contains(got[0].Stdout, id) {
		t.Fatalf("documented hook: %+v\nlog:\n%s", got, hf.logs)
	}
}

// TestCommandHookFailureCounted: a hook that exits non-zero is retried like
// a webhook (three attempts), each attempt logged with its exit status and
// stderr, the event counted failed — and the agent's call is unaffected.
func TestCommandHookFailureCounted(t *testing.T) {
	hf := newHookFixture(t, "    - {id: broken, argv: [/bin/sh, -c, 'echo no pager >&2; exit 3']}\n")
	hf.declareGated(t)
	deadline := time.Now().Add(20 * time.Second)
	for hf.counter(t, "failed") != "1" {
		if time.Now().After(deadline) {
			t.Fatalf("no failed delivery counted\nlog:\n%s", hf.logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	got := hf.lines(t, "command hook exited with an error", 3, time.Second)
	if len(got) != 3 || got[0].Exit != 3 || got[0].Hook != "broken" || !strings.Contains(hf.logs.String(), `"stderr":"no pager\n"`) {
		t.Fatalf("attempts: %+v", got)
	}
	if n := len(hf.lines(t, "command not delivered", 1, time.Second)); n != 1 {
		t.Fatalf("%d 'command not delivered' lines, want 1", n)
	}
}
