//go:build linux

package confine

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

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

// systemDirs are bound whole (read and execute); a symlink (merged /usr:
// /bin -> usr/bin) is recreated as the same symlink.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// systemFiles are bound read-only one by one: what the dynamic loader and
// libc read, and nothing that holds secrets (/etc/shadow, SSH host keys and
// Airlock's own configuration do not exist inside; TestHostileShadow).
// /etc/alternatives holds only symlinks into /usr (Debian's /usr/bin/awk is
// one); without it such commands are "not found".
var systemFiles = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime", "/etc/alternatives",
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/locale.alias",
}

// devFiles are the device nodes a pipeline gets; the first two are
// writable (Landlock AccessDevRW), the rest read-only.
var devFiles = []string{"/dev/null", "/dev/full", "/dev/zero", "/dev/random", "/dev/urandom"}

// ScratchFD is the descriptor of the quota tmpfs in the trampoline.
const ScratchFD = 5

// buildRoot runs in the trampoline, as root in its new mount namespace:
// it builds the run's root on the quota tmpfs and pivots into it. The
// working directory is "/" afterwards.
//
// Every mount is private by then (runTrampoline does it first): with shared
// propagation (systemd's default) every mount below would also appear on
// the host.
func buildRoot(ws *Spec, scratch int) error {
	if err := unix.MoveMount(scratch, "", unix.AT_FDCWD, ws.Stage, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attaching the run's tmpfs: %w", err)
	}
	unix.Close(scratch)
	r := ws.Stage
	if err := writableDir(r, OutDir, ws.UID, ws.GID); err != nil {
		return err
	}
	if ws.Temp {
		if err := writableDir(r, TempDir, ws.UID, ws.GID); err != nil {
			return err
		}
	}
	if err := bindSystem(r); err != nil {
		return err
	}
	if err := os.Mkdir(r+PoolMountDir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", PoolMountDir, err)
	}
	for _, p := range ws.Pools {
		if err := bindPool(r, p); err != nil {
			return err
		}
	}
	for _, b := range ws.Binds {
		if coveredBySystem(b) {
			continue // already visible (and read-only) through a system bind
		}
		if err := bindPath(r, unix.AT_FDCWD, b, b, unix.AT_RECURSIVE, roAttrs); err != nil {
			return err
		}
	}
	return pivotInto(r)
}

// roAttrs are set on every bind: read-only, no setuid, no device nodes.
const roAttrs = unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV

func writableDir(r, dir string, uid, gid int) error {
	p := r + dir
	if err := os.Mkdir(p, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	if err := os.Chown(p, uid, gid); err != nil {
		return fmt.Errorf("handing %s to the sandbox uid: %w", dir, err)
	}
	return nil
}

// bindSystem binds the system directories, /etc files and device nodes
// that exist on this host (an absent one, /lib32 say, is skipped).
func bindSystem(r string) error {
	for _, d := range systemDirs {
		if err := bindPath(r, unix.AT_FDCWD, d, d, unix.AT_RECURSIVE, roAttrs); err != nil && !errors.Is(err, errSourceMissing) {
			return err
		}
	}
	for _, f := range systemFiles {
		if err := bindPath(r, unix.AT_FDCWD, f, f, unix.AT_RECURSIVE, roAttrs); err != nil && !errors.Is(err, errSourceMissing) {
			return err
		}
	}
	for i, f := range devFiles {
		attrs := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NOEXEC)
		if i >= 2 {
			attrs |= unix.MOUNT_ATTR_RDONLY
		}
		if err := bindPath(r, unix.AT_FDCWD, f, f, 0, attrs); err != nil && !errors.Is(err, errSourceMissing) {
			return err
		}
	}
	return nil
}

func coveredBySystem(p string) bool {
	for _, d := range systemDirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

var errSourceMissing = errors.New("bind source does not exist")

// bindPath binds the host path src (resolved relative to dirfd) at dst
// inside the new root r, with attrs. A symlink src is recreated as the same
// symlink (its target is then resolved inside the new root), so merged-/usr
// layouts and /etc/localtime work.
func bindPath(r string, dirfd int, src, dst string, recursive int, attrs uint64) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, src, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%s: %w", src, errSourceMissing)
		}
		return fmt.Errorf("inspecting %s: %w", src, err)
	}
	if err := os.MkdirAll(r+path.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("creating the mount point of %s: %w", dst, err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		target, err := readlinkat(dirfd, src)
		if err == nil {
			err = os.Symlink(target, r+dst)
		}
		if err != nil {
			return fmt.Errorf("recreating symlink %s: %w", dst, err)
		}
		return nil
	}
	tree, err := unix.OpenTree(dirfd, src, uint(unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|recursive))
	if err != nil {
		return fmt.Errorf("cloning %s: %w", src, err)
	}
	defer unix.Close(tree)
	return attach(tree, r+dst, st.Mode&unix.S_IFMT == unix.S_IFDIR, attrs)
}

// attach sets attrs on the detached tree and mounts it at target, creating
// the mount point (a directory or an empty file).
func attach(tree int, target string, isDir bool, attrs uint64) error {
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE,
		&unix.MountAttr{Attr_set: attrs}); err != nil {
		return fmt.Errorf("mount flags of %s: %w", target, err)
	}
	if isDir {
		if err := os.Mkdir(target, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("creating mount point %s: %w", target, err)
		}
	} else {
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
		if err != nil {
			return fmt.Errorf("creating mount point %s: %w", target, err)
		}
		f.Close()
	}
	if err := unix.MoveMount(tree, "", unix.AT_FDCWD, target, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("mounting %s: %w", target, err)
	}
	return nil
}

// bindPool binds exactly the listed files of one pool at /pools/<id>.
// Each name is opened beneath the pool directory (RESOLVE_BENEATH: no "..",
// no absolute symlink, no symlink that climbs out; RESOLVE_NO_MAGICLINKS:
// no /proc-style jumps) as an O_PATH descriptor, must be a regular file,
// and that very file is what gets bound: the check and the bind cannot be
// raced apart by swapping names in the pool.
func bindPool(r string, p Pool) error {
	dirfd, err := unix.Open(p.Dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("pool %s: opening its directory: %w", p.ID, err)
	}
	defer unix.Close(dirfd)
	base := r + PoolMountDir + "/" + p.ID
	if err := os.Mkdir(base, 0o755); err != nil {
		return fmt.Errorf("pool %s: %w", p.ID, err)
	}
	how := &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS}
	for _, name := range p.Files {
		fd, err := unix.Openat2(dirfd, name, how)
		if err != nil {
			return fmt.Errorf("pool %s: file %q: %w", p.ID, name, err)
		}
		err = bindPoolFile(fd, base, p.ID, name)
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

func bindPoolFile(fd int, base, id, name string) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("pool %s: file %q: %w", id, name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("pool %s: file %q is not a regular file", id, name)
	}
	if err := os.MkdirAll(base+"/"+path.Dir(name), 0o755); err != nil {
		return fmt.Errorf("pool %s: file %q: %w", id, name, err)
	}
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("pool %s: cloning %q: %w", id, name, err)
	}
	defer unix.Close(tree)
	return attach(tree, base+"/"+name, false, roAttrs)
}

// poolsReadable runs in the trampoline after the uid drop, before Landlock:
// every bound pool file must be readable by the pipeline's uid. Root bound
// it, so the directories above it on the host need not be traversable by
// that uid (a pool in a 0700 home: TestPoolUnderPrivateDir), but the bind
// keeps the file's own owner, mode and ACL: root's bind widens what paths
// lead to a file, never who may read it. A file the uid cannot read
// refuses the run here, naming the pool and the file, rather than
// surfacing as an EACCES somewhere in the pipeline's output
// (TestPoolFileUnreadable). faccessat with the real ids, which the drop
// set to the sandbox uid, asks the kernel itself: mode bits and ACLs.
func poolsReadable(ws *Spec) error {
	for _, p := range ws.Pools {
		for _, name := range p.Files {
			if err := unix.Faccessat(unix.AT_FDCWD, PoolMountDir+"/"+p.ID+"/"+name, unix.R_OK, 0); err != nil {
				return fmt.Errorf("pool %s: file %q is not readable by the sandbox user (uid %d): %w", p.ID, name, ws.UID, err)
			}
		}
	}
	return nil
}

// pivotInto makes r the root and detaches the old one, so no host path
// outside the binds resolves any more.
func pivotInto(r string) error {
	if err := unix.Chdir(r); err != nil {
		return fmt.Errorf("entering the new root: %w", err)
	}
	// pivot_root(".", "."): the old root is stacked on the new one and
	// detached right after, without needing a directory for it.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detaching the old root: %w", err)
	}
	return unix.Chdir("/")
}

func readlinkat(dirfd int, p string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dirfd, p, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// MountPoints is how many inodes the run's root needs besides the
// pipeline's own files.
func (ws *Spec) MountPoints() int {
	n := 64 + len(systemDirs) + len(systemFiles) + len(devFiles) + 4*len(ws.Binds)
	for _, p := range ws.Pools {
		n += 1 + 2*len(p.Files) // the file and, at most, one new directory each
	}
	return n
}
