//go:build !linux

package workspace

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// publishSync, without syncfs(2): every file and directory under dir is
// fsynced (pipelines run only on Linux; this keeps the package portable).
var publishSync = func(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		return errors.Join(f.Sync(), f.Close())
	})
}
