//go:build linux

package workspace

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// publishSync makes everything written under dir durable with one
// syncfs(2) of its filesystem: the output copies, the staging directory's
// entries, published/'s rename and the manifest. One call instead of an
// fsync per file and per directory (four or more per run, each a journal
// commit on ext4). syncfs also reports a writeback error of the
// filesystem since dir was opened (Linux 5.8 and later), which fails the
// publication: nothing is registered as a pool (fail closed).
// TestCollectSyncsOnce counts the calls.
var publishSync = func(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(unix.Syncfs(int(d.Fd())), d.Close())
}
