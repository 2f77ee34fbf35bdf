package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// buildProbe builds testdata/mcpprobe (a stdio MCP server that tries the
// network and a path) into a directory the sandbox user can read.
func buildProbe(t *testing.T) string { return buildTestdata(t, "mcpprobe") }

// TestUpstreamStdioSandboxed: a stdio upstream runs inside the pipeline
// sandbox: it cannot connect to a listener on the host's loopback (no
// network), cannot list the state directory (not in its root), and gets
// only the environment its config names — never the agent's token or
// Airlock's environment.
func TestUpstreamStdioSandboxed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the sandbox needs root")
	}
	bin := buildProbe(t)
	ln, accepted := countingListener(t, "127.0.0.1:0")
	t.Setenv("PROBE_CREDENTIAL", "probe-credential")
	t.Setenv("AIRLOCK_TEST_TOKEN", testToken) // in Airlock's environment, must not reach the upstream
	f, _ := upstreamFixtureWith(t, "mcper", fmt.Sprintf(`  - id: probe
    command: [%s]
    read_only: [%s]
    env: {PROBE_TOKEN: {env: PROBE_CREDENTIAL}}
    timeout_ms: 20000
  - id: broken
    command: [/bin/false]
    timeout_ms: 20000
`, bin, filepath.Dir(bin)))
	op, err := operator.Open(f.state, false)
	must(t, err)
	op.UseSandboxTrampoline(trampoline)
	// An upstream that dies at once is UPSTREAM_UNAVAILABLE (the pipes
	// close with the process): a listing that waited for the timeout would
	// be UPSTREAM_TIMEOUT, so the code is the verdict, not the time taken.
	errs := op.RefreshUpstreams(context.Background(), f.cfg, "broken", "tester")
	if c, _ := violation.CodeOf(errs["broken"]); c != violation.UpstreamUnavailable {
		t.Fatalf("a dead upstream: %v", errs)
	}
	if errs := op.RefreshUpstreams(context.Background(), f.cfg, "probe", "tester"); len(errs) > 0 {
		t.Fatalf("listing the sandboxed upstream: %v", errs)
	}
	pins, err := op.UpstreamPins(context.Background(), "probe")
	must(t, err)
	if len(pins) != 1 || pins[0].Tool != "probe" {
		t.Fatalf("pins: %+v", pins)
	}
	_, err = op.ApproveUpstreamTool(context.Background(), "probe", "probe", pins[0].SeenDigest, "tester")
	must(t, err)
	op.Close()

	c := f.connect(t)
	n := mcpNeed("probe", map[string]any{"addr": ln.Addr().String(), "path": f.state})
	n["parameters"].(map[string]any)["upstream"] = "probe"
	res := callOK(t, c, "declare_need", n)
	out := text(res)
	if !strings.Contains(out, "dial: refused") || !strings.Contains(out, "read: refused") {
		t.Fatalf("the sandboxed upstream reached out: %s", out)
	}
	if !strings.Contains(out, "PROBE_TOKEN=probe-credential") || strings.Contains(out, testToken) || strings.Contains(out, "AIRLOCK_") {
		t.Fatalf("environment: %s", out)
	}
	if accepted.Load() != 0 {
		t.Fatalf("the host listener accepted %d connections", accepted.Load())
	}
}

// countingListener listens on addr for the test's life and counts the
// connections it accepts (closing each): a probe that must not reach the
// host shows as a count that stays 0.
func countingListener(t *testing.T, addr string) (net.Listener, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	must(t, err)
	t.Cleanup(func() { ln.Close() })
	accepted := new(atomic.Int64)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	return ln, accepted
}
