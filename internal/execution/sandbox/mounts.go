//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// The pipeline runs in its own mount namespace (CLONE_NEWNS) with a root
// filesystem built for the run, so that
//
//   - it sees exactly the manifest's files of each pool and nothing else of
//     the pool directory: every listed file is bound read-only, one by one,
//     at /pools/<id>/<name>; a .env or a key file lying beside them does not
//     exist inside the sandbox (TestHostilePoolOnlyManifest). A listed name
//     is resolved beneath the pool directory (openat2 RESOLVE_BENEATH), so a
//     symlink swapped in to leave the pool refuses the run instead of being
//     bound (TestHostilePoolSymlinkEscape);
//   - everything it can write (/out and, with Spec.Temp, /tmp) is on one
//     size-limited tmpfs, the run's disk quota: writing past
//     Limits.DiskBytes fails with ENOSPC and never reaches the host disk
//     that holds the audit store (TestHostileDiskQuota);
//   - every path it can see or print is a stable sandbox path (/out, /tmp,
//     /pools/<id>) rather than the host path of its run directory, so two
//     runs of the same pipeline see the same strings
//     (TestHostileStablePaths, TestSameSnapshotTwice).
//
// How: the parent creates the quota tmpfs with the new mount API
// (fsopen/fsmount: a detached mount no namespace holds) and passes the
// trampoline a descriptor to it. The trampoline, root in its new mount
// namespace, makes every mount private (nothing propagates back to the
// host), attaches the tmpfs on the stage directory, binds into it the
// system directories needed to run programs (read-only, nosuid, nodev),
// the few /etc files the loader and libc read, five device nodes, the pool
// files and the Spec's extra read-only paths, then pivot_root's into it and
// detaches the old root: nothing else of the host is reachable by any path.
// /proc and /sys are not mounted (a procfs would show, in mountinfo, the
// host paths the binds came from). Landlock then applies its rules to the
// new tree, seccomp follows, as before.
//
// The parent keeps its descriptor to the tmpfs. When the pipeline has ended
// (its PID namespace, and with it the mount namespace, is gone) the parent
// still reaches /out through that descriptor, hands it to Spec.Collect and
// closes it, which frees the tmpfs: a run leaves nothing on any disk and
// no mount anywhere, even if the server crashes mid-run.

// scratchInodes bounds the files of a run's tmpfs besides the mount points:
// a pipeline creating millions of empty files hits ENOSPC, not the kernel's
// memory.
const scratchInodes = 1 << 16

// newScratch creates the run's quota tmpfs as a detached mount: size
// bytes (rounded up to pages), at most inodes inodes, root directory 0755
// root-owned, nosuid, nodev, noexec (W^X: nothing the pipeline writes can be
// executed; Landlock denies it too). The returned descriptor is the only
// reference; closing it, once the run's mount namespace is gone, frees it.
func newScratch(size int64, inodes int) (*os.File, error) {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fsopen(tmpfs): %w", err)
	}
	defer unix.Close(fsfd)
	for _, kv := range [][2]string{
		{"size", strconv.FormatInt(size, 10)},
		{"nr_inodes", strconv.Itoa(inodes)},
		{"mode", "0755"},
	} {
		if err := unix.FsconfigSetString(fsfd, kv[0], kv[1]); err != nil {
			return nil, fmt.Errorf("tmpfs option %s=%s: %w", kv[0], kv[1], err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return nil, fmt.Errorf("creating tmpfs: %w", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC,
		unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fsmount(tmpfs): %w", err)
	}
	return os.NewFile(uintptr(mfd), "scratch"), nil
}

// scratchUsage reports the bytes in use on the quota tmpfs and whether it
// is full (no block or no inode left), which is when writes failed.
func scratchUsage(f *os.File) (used int64, full bool, err error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return 0, false, fmt.Errorf("statfs of the run's tmpfs: %w", err)
	}
	used = int64(st.Blocks-st.Bfree) * st.Bsize
	return used, st.Bfree == 0 || st.Ffree == 0, nil
}

// ensureStage returns the stage directory: an empty, root-owned directory
// that is not writable by anyone else, on which each trampoline mounts its
// new root inside its own mount namespace (the host never sees the mount).
// A stage that exists as anything else (a symlink, another owner) is
// refused rather than trusted.
func ensureStage() (string, error) {
	dir := filepath.Join(os.TempDir(), ".airlock-sandbox-root")
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("creating stage %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return "", fmt.Errorf("checking stage %s: %w", dir, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Uid != 0 || st.Mode&0o022 != 0 {
		return "", fmt.Errorf("stage %s is not a root-owned directory writable only by root", dir)
	}
	return dir, nil
}
