// Package atomicfile replaces a file whole or not at all, durably: what a
// crash leaves is the old file or the new one, never half of either. The
// export cursor, a run's output manifest, the verification marker and
// `policy fmt` all write this way.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Write replaces path with data: a temporary file beside it is written,
// fsynced, given perm and renamed over path, and the directory is fsynced
// so the rename survives a crash.
func Write(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("atomicfile: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	_, err = f.Write(data)
	err = errors.Join(err, f.Chmod(perm), f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = SyncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("atomicfile: replacing %s: %w", filepath.Base(path), err)
	}
	return nil
}

// SyncDir fsyncs a directory, making the renames and creations in it
// durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
