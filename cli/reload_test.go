package cli

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/server"
)

const reloadCfg = `pools: []
policies:
  base: {allow: ["pool.*"]}
roles:
  local: {policy: base}
  agent: {policy: base, tokens: [{file: agent.token}]}
`

func status(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// reloadFixture is a runner and HTTP server built from reloadCfg in a
// fresh directory, with the watcher not yet started.
type reloadFixture struct {
	dir, cfgPath, token, url string
	r                        *runner.Runner
	srv                      *server.Server
}

func newReloadFixture(t *testing.T) *reloadFixture {
	t.Helper()
	dir := t.TempDir()
	f := &reloadFixture{dir: dir, cfgPath: filepath.Join(dir, "airlock.yaml"), token: filepath.Join(dir, "agent.token")}
	writeFile(t, f.cfgPath, reloadCfg)
	writeFile(t, f.token, "old-token-123\n")
	cfg, err := config.Load(f.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if f.r, err = runner.New(cfg, filepath.Join(dir, "state"), nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.r.Close() })
	if f.srv, err = server.New(f.r, nil); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(f.srv.Handler())
	t.Cleanup(ts.Close)
	f.url = ts.URL
	return f
}

// watch runs the watcher the way serve does: on its own goroutine, so its
// first look at the files may come at any time after the server was built.
func (f *reloadFixture) watch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		watchConfig(ctx, f.cfgPath, f.r, f.srv, slog.New(slog.DiscardHandler), 20*time.Millisecond)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func (f *reloadFixture) accepts(t *testing.T, token string) bool {
	return status(t, f.url, token) != http.StatusUnauthorized
}

// rotated waits until from is refused and to accepted. Both, because the
// files are rewritten in place: a check between truncate and write reads
// an empty token, which refuses every token until the next check, so "from
// refused" alone can be a passing state.
func (f *reloadFixture) rotated(t *testing.T, from, to string) {
	t.Helper()
	waitFor(t, func() bool { return !f.accepts(t, from) && f.accepts(t, to) })
}

// refusalAudited reports whether a reload refused with an error mentioning
// want is in the audit trail.
func (f *reloadFixture) refusalAudited(t *testing.T, want string) bool {
	t.Helper()
	op, err := operator.Open(filepath.Join(f.dir, "state"), true)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	recs, err := op.Tail(context.Background(), 50)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if rec.Capability == "operator.reload" && rec.Outcome == "denied" && rec.Decision == "deny" && strings.Contains(rec.Error, want) {
			return true
		}
	}
	return false
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestTokenRevokedWithoutRestart: replacing a token file takes effect
// through the file watcher; a broken config afterwards is refused and the
// running configuration stays.
func TestTokenRevokedWithoutRestart(t *testing.T) {
	f := newReloadFixture(t)
	f.watch(t)

	if !f.accepts(t, "old-token-123") {
		t.Fatalf("old token refused before rotation")
	}
	writeFile(t, f.token, "new-token-456\n")
	f.rotated(t, "old-token-123", "new-token-456")

	// A broken configuration is refused; the running one stays in force.
	// Wait for the refusal itself rather than for a guessed duration.
	writeFile(t, f.cfgPath, reloadCfg+"bogus: true\n")
	waitFor(t, func() bool { return f.refusalAudited(t, "bogus") })
	if !f.accepts(t, "new-token-456") {
		t.Fatalf("a broken reload dropped the working configuration")
	}
}

// TestTokenRotatedBeforeWatcherStarts: a rotation landing after the server
// read its tokens but before the watcher first looked (serve starts the
// watcher on a goroutine) is applied. The watcher used to take that state
// as its baseline and never notice — the flake in the test above, forced.
func TestTokenRotatedBeforeWatcherStarts(t *testing.T) {
	f := newReloadFixture(t)
	writeFile(t, f.token, "new-token-456\n")
	f.watch(t)
	f.rotated(t, "old-token-123", "new-token-456")
}

// TestConfigChangedBeforeWatcherStarts: likewise for the config file: the
// watcher compares against the configuration in force, not the file as it
// happens to be when the watcher first looks.
func TestConfigChangedBeforeWatcherStarts(t *testing.T) {
	f := newReloadFixture(t)
	writeFile(t, filepath.Join(f.dir, "second.token"), "second-token-789\n")
	writeFile(t, f.cfgPath, strings.Replace(reloadCfg, "[{file: agent.token}]", "[{file: agent.token}, {file: second.token}]", 1))
	f.watch(t)
	waitFor(t, func() bool { return f.accepts(t, "second-token-789") })
}

// TestTokenRewriteKeepsSizeAndMtime: a token replaced by one of the same
// length within the same timestamp tick is still noticed. The mtime is put
// back explicitly, since how coarse the tick is depends on the filesystem.
func TestTokenRewriteKeepsSizeAndMtime(t *testing.T) {
	f := newReloadFixture(t)
	f.watch(t)
	// A first, ordinary rotation proves the watcher is running and has its
	// baseline, so the rewrite below is judged by the periodic check.
	writeFile(t, f.token, "new-token-456\n")
	f.rotated(t, "old-token-123", "new-token-456")
	fi, err := os.Stat(f.token)
	if err != nil {
		t.Fatal(err)
	}

	// Renamed into place with the old mtime already set, so no check can see
	// the file with a fresh mtime or another size.
	tmp := f.token + ".tmp"
	writeFile(t, tmp, "bis-token-789\n")
	if err := os.Chtimes(tmp, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, f.token); err != nil {
		t.Fatal(err)
	}
	if after, err := os.Stat(f.token); err != nil || after.Size() != fi.Size() || !after.ModTime().Equal(fi.ModTime()) {
		t.Fatalf("rewrite changed size or mtime (err %v); the test needs both unchanged", err)
	}
	f.rotated(t, "new-token-456", "bis-token-789")
}

// TestTokenRevokedWhileConfigRefused: a rotation arriving together with a
// broken config is applied against the configuration still in force; the
// refusal must not keep the revoked token alive.
func TestTokenRevokedWhileConfigRefused(t *testing.T) {
	f := newReloadFixture(t)
	f.watch(t)
	// Config first: were the token rotated first, a check in between could
	// apply it with the good configuration and prove nothing.
	writeFile(t, f.cfgPath, reloadCfg+"bogus: true\n")
	writeFile(t, f.token, "new-token-456\n")
	waitFor(t, func() bool { return f.refusalAudited(t, "bogus") })
	f.rotated(t, "old-token-123", "new-token-456")
}

// TestFingerprintStableAcrossRoles: with token files in several roles, an
// unchanged set of files fingerprints the same every time. Roles are a map,
// and hashing them in iteration order made the watcher reload (and audit a
// reload) on checks where nothing had changed.
func TestFingerprintStableAcrossRoles(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "airlock.yaml")
	yaml := "pools: []\npolicies:\n  base: {allow: [\"pool.*\"]}\nroles:\n  local: {policy: base}\n"
	for _, role := range []string{"agent", "ci", "ops", "review", "bot"} {
		yaml += "  " + role + ": {policy: base, tokens: [{file: " + role + ".token}]}\n"
		writeFile(t, filepath.Join(dir, role+".token"), role+"-token-123\n")
	}
	writeFile(t, cfgPath, yaml)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	first := fingerprint(cfgPath, readContent(cfgPath), cfg)
	for i := range 200 {
		if fingerprint(cfgPath, readContent(cfgPath), cfg) != first {
			t.Fatalf("call %d: fingerprint changed with no file changed", i)
		}
	}
}

// waitFor polls cond until it holds. The minute is a hang guard, not the
// verdict: the watcher polls every 20 ms, and on a loaded machine four
// seconds (the old bound) was not always enough for it to be scheduled.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
	}
}
