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

	"github.com/airlock-dev/airlock/config"
	"github.com/airlock-dev/airlock/runner"
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

// TestTokenRevokedWithoutRestart: replacing a token file takes effect
// through the file watcher; a broken config afterwards is refused and the
// running configuration stays.
func TestTokenRevokedWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "airlock.yaml")
	os.WriteFile(cfgPath, []byte(reloadCfg), 0o644)
	os.WriteFile(filepath.Join(dir, "agent.token"), []byte("old-token-123\n"), 0o600)
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	r, err := runner.New(cfg, filepath.Join(dir, "state"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	srv, err := server.New(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go watchConfig(ctx, cfgPath, r, srv, slog.New(slog.DiscardHandler), 20*time.Millisecond)

	if got := status(t, ts.URL, "old-token-123"); got == http.StatusUnauthorized {
		t.Fatalf("old token refused before rotation")
	}
	os.WriteFile(filepath.Join(dir, "agent.token"), []byte("new-token-456\n"), 0o600)
	waitFor(t, func() bool { return status(t, ts.URL, "old-token-123") == http.StatusUnauthorized })
	if got := status(t, ts.URL, "new-token-456"); got == http.StatusUnauthorized {
		t.Fatalf("new token refused after rotation")
	}

	// A broken configuration is refused; the running one stays in force.
	os.WriteFile(cfgPath, []byte(reloadCfg+"bogus: true\n"), 0o644)
	time.Sleep(200 * time.Millisecond)
	if got := status(t, ts.URL, "new-token-456"); got == http.StatusUnauthorized {
		t.Fatalf("a broken reload dropped the working configuration")
	}
	op, err := runner.OpenOperator(filepath.Join(dir, "state"), true)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	recs, _ := op.Tail(context.Background(), 50)
	var refused bool
	for _, rec := range recs {
		if rec.Capability == "operator.reload" && rec.Outcome == "error" && strings.Contains(rec.Error, "bogus") {
			refused = true
		}
	}
	if !refused {
		t.Fatal("refused reload not audited")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 200 {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("condition not reached")
}
