package workspace

import (
	"fmt"
	"os"
)

// The run's host directories and a collector reading the host out/. The
// binary never uses them — run_pipeline's pipelines write in the sandbox's
// per-run tmpfs, which the sandbox hands to CollectFrom — but the tests
// drive a workspace without a sandbox, writing in out/ as a pipeline would.

// OutDir is the run's out/ directory.
func (w *Workspace) OutDir() string { return w.outDir }

// TempDir is the run's scratch directory, or "" when temp files were not
// allowed. Nothing in it is ever published.
func (w *Workspace) TempDir() string { return w.tmpDir }

// Dir is the run directory, baseDir/runID.
func (w *Workspace) Dir() string { return w.dir }

// Collect is CollectFrom for the run's own out/ directory, which the tests
// write in place of a sandboxed pipeline: it opens out/ through an os.Root
// and, on success, deletes it (undeclared files are discarded).
func (w *Workspace) Collect() (*Collected, error) {
	w.mu.Lock()
	done := w.collected
	w.mu.Unlock()
	if done {
		return nil, ErrCollected
	}
	root, err := os.OpenRoot(w.outDir)
	if err != nil {
		return nil, fmt.Errorf("opening outputs: %w", err)
	}
	defer root.Close()
	c, err := w.CollectFrom(root)
	if err != nil {
		return c, err
	}
	if err := os.RemoveAll(w.outDir); err != nil {
		return c, fmt.Errorf("discarding out/ after publishing: %w", err)
	}
	return c, nil
}

// SetPublishSync replaces the flush CollectFrom makes its publication
// durable with, for the length of a test.
func SetPublishSync(t interface{ Cleanup(func()) }, f func(dir string) error) {
	old := publishSync
	publishSync = f
	t.Cleanup(func() { publishSync = old })
}
