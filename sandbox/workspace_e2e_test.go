//go:build linux

package sandbox_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/sandbox"
	"github.com/airlock-dev/airlock/workspace"
)

// TestWorkspaceEndToEnd: a sandboxed pipeline writes its declared output
// plus an undeclared file, a symlink to /etc/shadow and a directory; the
// workspace publishes only the declared output and reports the rest.
func TestWorkspaceEndToEnd(t *testing.T) {
	s := newSandbox(t)
	d := newRunDirs(t)
	w, err := workspace.Create(filepath.Join(d.root, "runs"), "run-e2e", []string{"summary.txt"}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Remove()
	res, err := s.Run(context.Background(), sandbox.Spec{
		Argv:     []string{"/bin/sh", filepath.Join(fixtureDir, "e2e_pipeline.sh"), filepath.Join(d.pool, "data.csv"), w.OutDir()},
		Env:      []string{"TMPDIR=" + w.TempDir()},
		ReadOnly: []string{fixtureDir, d.pool},
		Writable: []string{w.OutDir(), w.TempDir()},
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("run: %v %+v", err, res)
	}
	c, err := w.Collect()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("rows=3 sum=12\n"))
	if len(c.Outputs) != 1 || c.Outputs[0].SHA256 != hex.EncodeToString(sum[:]) {
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
