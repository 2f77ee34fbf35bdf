//go:build linux

package sandbox_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
	"github.com/airlock-dev/airlock/internal/execution/workspace"
)

// e2eRun runs e2e_pipeline.sh (summary, undeclared file, symlink to
// /etc/shadow, directory, scratch file, and the paths it saw) in a fresh
// workspace and collects /out into it.
func e2eRun(t *testing.T, s *sandbox.Sandbox, d runDirs, runID string) *workspace.Collected {
	t.Helper()
	w, err := workspace.Create(filepath.Join(d.root, "runs"), runID, []string{"summary.txt", "paths.txt"}, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Remove() })
	var c *workspace.Collected
	res, err := s.Run(context.Background(), sandbox.Spec{
		Argv:     []string{"/bin/sh", filepath.Join(fixtureDir, "e2e_pipeline.sh"), "/pools/p/data.csv", sandbox.OutDir},
		Env:      []string{"TMPDIR=" + sandbox.TempDir},
		ReadOnly: []string{fixtureDir},
		Pools:    d.pools(),
		Temp:     true,
		Collect: func(out *os.Root) (err error) {
			c, err = w.CollectFrom(out)
			return err
		},
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v %+v", err, res)
	}
	return c
}

// TestWorkspaceEndToEnd: a sandboxed pipeline writes its declared outputs
// plus an undeclared file, a symlink to /etc/shadow and a directory; the
// workspace publishes only the declared outputs and reports the rest.
func TestWorkspaceEndToEnd(t *testing.T) {
	s := newSandbox(t)
	d := newRunDirs(t)
	c := e2eRun(t, s, d, "run-e2e")
	sum := sha256.Sum256([]byte("rows=3 sum=12\n"))
	if len(c.Outputs) != 2 || c.Outputs[1].Name != "summary.txt" || c.Outputs[1].SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("outputs %+v", c.Outputs)
	}
	var paths []string
	for _, v := range c.Violations {
		paths = append(paths, v.Path)
	}
	if got := strings.Join(paths, " "); got != "leak sub undeclared.txt" {
		t.Fatalf("violations %+v", c.Violations)
	}
	t.Logf("snapshot %s, violations %+v", c.SnapshotHash, c.Violations)
}

// TestSameSnapshotTwice: the same pipeline over the same pool gives the same
// snapshot hash in two runs, although it writes into its outputs the paths
// it sees (working directory, output and temp directory, pool): those are
// the stable sandbox paths, not the host paths of each run's workspace.
func TestSameSnapshotTwice(t *testing.T) {
	s := newSandbox(t)
	d := newRunDirs(t)
	first := e2eRun(t, s, d, "run-a")
	second := e2eRun(t, s, d, "run-b")
	if first.SnapshotHash != second.SnapshotHash {
		t.Fatalf("snapshot hashes differ: %s vs %s", first.SnapshotHash, second.SnapshotHash)
	}
	b, err := os.ReadFile(filepath.Join(first.PublishedDir, "paths.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "pwd=/out out=/out tmp=/tmp pool=/pools/p/data.csv\n"; got != want {
		t.Fatalf("paths.txt %q, want %q", got, want)
	}
}
