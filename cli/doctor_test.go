package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testkit/gobuild"
	"github.com/airlock-dev/airlock/internal/testkit/mcptest"
	"github.com/airlock-dev/airlock/internal/testkit/testpool"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

var (
	binMu    sync.Mutex
	binCache = map[string]string{}
	binDir   string
)

// airlockBinary builds the airlock command with CGO_ENABLED=cgo (once per
// test process) and returns its path: the real binary a user would get from
// `go build` / `go install` on a machine with (cgo "1") or without a C
// compiler.
func airlockBinary(t *testing.T, cgo string) string {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	if p, ok := binCache[cgo]; ok {
		return p
	}
	if binDir == "" {
		d, err := os.MkdirTemp("", "airlock-cli-bin-")
		must(t, err)
		must(t, os.Chmod(d, 0o755)) // the sandbox re-executes it as its trampoline
		binDir = d
	}
	out := filepath.Join(binDir, "airlock-cgo"+cgo)
	gobuild.Build(t, out, "..", "CGO_ENABLED="+cgo)
	binCache[cgo] = out
	return out
}

// pipelineConfig writes a configuration with one pool and one pipeline in
// a directory tree the sandbox user can traverse.
func pipelineConfig(t *testing.T) (cfg, state string) {
	t.Helper()
	root := t.TempDir()
	for d := root; d != os.TempDir() && d != "/"; d = filepath.Dir(d) {
		must(t, os.Chmod(d, 0o755)) // t.TempDir's directories are 0700
	}
	testpool.Write(t, filepath.Join(root, "pool"), map[string]string{"in.txt": "hello\n"})
	cfg = filepath.Join(root, "airlock.yaml")
	must(t, os.WriteFile(cfg, []byte(`pools:
  - {id: p, path: pool, trust: trusted}
policies:
  base:
    allow: ["pool.*", "pipeline.run:*"]
    filesystem: {read: [pools], write: [out]}
roles:
  local: {policy: base, pools: [p], initial_phase: execution}
pipelines:
  - name: copy
    argv: [/bin/cp, "{pool.p}/in.txt", "{out}/out.txt"]
    inputs: [p]
    outputs: [out.txt]
`), 0o644))
	return cfg, filepath.Join(root, "state")
}

// TestDoctorAgreesWithServe: `airlock doctor` says run_pipeline is
// available exactly when `airlock serve` on the same configuration and
// state runs a pipeline. A binary built with cgo cannot be the sandbox
// trampoline; doctor used to call it ready while serve refused every run
// (issue 16). Both binaries are real `go build` outputs.
func TestDoctorAgreesWithServe(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the sandbox needs root")
	}
	if testing.Short() {
		t.Skip("builds two binaries")
	}
	tests := []struct {
		cgo       string
		wantReady bool
		wantText  string
	}{
		{"0", true, "run_pipeline: available"},
		{"1", false, "built with cgo"},
	}
	for _, tt := range tests {
		for _, demo := range []bool{true, false} {
			name := "CGO_ENABLED=" + tt.cgo + "/config"
			if demo {
				name = "CGO_ENABLED=" + tt.cgo + "/demo"
			}
			t.Run(name, func(t *testing.T) {
				bin := airlockBinary(t, tt.cgo)
				cfg, state := pipelineConfig(t)
				args, pipeline := []string{"--config", cfg}, "copy"
				if demo { // no flags at all: the state from $AIRLOCK_STATE, the embedded demo
					args, pipeline = nil, "sales_summary"
				}
				env := []string{"PATH=" + os.Getenv("PATH"), "AIRLOCK_STATE=" + state}
				doc := exec.Command(bin, append([]string{"doctor"}, args...)...)
				doc.Env = env
				out, err := doc.CombinedOutput()
				var exit *exec.ExitError
				if err != nil && !errors.As(err, &exit) {
					t.Fatal(err)
				}
				doctorReady := err == nil
				if doctorReady != tt.wantReady || !strings.Contains(string(out), tt.wantText) {
					t.Errorf("doctor: ready=%v, want %v, output:\n%s", doctorReady, tt.wantReady, out)
				}

				c, err := client.NewStdioMCPClient(bin, env, append([]string{"serve"}, args...)...)
				must(t, err)
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				init := mcp.InitializeRequest{}
				init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
				if _, err := c.Initialize(ctx, init); err != nil {
					t.Fatal(err)
				}
				res := callTool(t, c, "run_pipeline", map[string]any{"pipeline": pipeline})
				serveRan := !res.IsError
				if res.IsError && !strings.HasPrefix(mcptest.Text(res), "UNAVAILABLE") {
					t.Fatalf("run_pipeline failed otherwise: %s", mcptest.Text(res))
				}
				if serveRan != doctorReady {
					t.Fatalf("doctor said ready=%v, serve ran the pipeline=%v (%.300s)\ndoctor:\n%s", doctorReady, serveRan, mcptest.Text(res), out)
				}
			})
		}
	}
}

// TestDoctorWithoutPipelines: a configuration with no pipelines (what
// airlock init writes) has nothing to refuse: doctor shows the host and
// exits 0.
func TestDoctorWithoutPipelines(t *testing.T) {
	if os.Geteuid() != 0 || testing.Short() {
		t.Skip("the sandbox needs root; builds a binary")
	}
	root := initTree(t)
	cfg := filepath.Join(root, "airlock.yaml")
	if out, err := run(t, "init", "--config", cfg, filepath.Join(root, "docs")); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	out, err := exec.Command(airlockBinary(t, "0"), "doctor", "--config", cfg, "--state", filepath.Join(root, "state")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "run_pipeline: no pipelines are configured") || !strings.Contains(string(out), "what this host provides") {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
}
