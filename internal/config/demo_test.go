package config

import (
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDemoPoolsReadableUnderStrictUmask: the demo's pool files are 0444
// whatever the process umask: the pipeline sandbox's user (not the
// owner) reads them, and a umask of 077 would otherwise leave 0400 and
// refuse every demo pipeline with sandbox.ErrPoolUnreadable.
func TestDemoPoolsReadableUnderStrictUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "demo")
	cfg, err := Demo(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	for _, p := range cfg.Pools {
		err := filepath.WalkDir(p.Path, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			files++
			if info.Mode().Perm() != 0o444 {
				t.Errorf("%s: mode %04o, want 0444", path, info.Mode().Perm())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if files == 0 {
		t.Fatal("the demo has no pool files")
	}
}
