//go:build unix

package workspace_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/workspace"
)

// BenchmarkCreateCollect: the workspace's whole overhead for a run with
// three 64 KiB outputs — create, collect (walk, hash, copy, rename), remove.
func BenchmarkCreateCollect(b *testing.B) {
	base := b.TempDir()
	content := []byte(strings.Repeat("x", 64<<10))
	outs := []string{"a.csv", "b.json", "reports/c.txt"}
	i := 0
	for b.Loop() {
		i++
		w, err := workspace.Create(base, fmt.Sprintf("run-%d", i), outs, true)
		if err != nil {
			b.Fatal(err)
		}
		for _, o := range outs {
			p := filepath.Join(w.OutDir(), o)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, content, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Collect(); err != nil {
			b.Fatal(err)
		}
		os.RemoveAll(w.Dir())
	}
}
