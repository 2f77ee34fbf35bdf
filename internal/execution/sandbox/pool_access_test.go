//go:build linux

package sandbox_test

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

// Where a pool may live and who may read it: root binds the manifest's
// files before the uid drop (mounts.go), so no directory on the way needs
// to be traversable by the sandbox uid, while each file keeps its own
// owner, mode and ACL.

// TestPoolUnderPrivateDir (issue 24 item 11): a pool below a 0700
// directory — a user's home — is bound by root in the trampoline, before
// the uid drop, so the pipeline reads the manifest's files although its
// uid could never walk to them on the host. What root's bind does not
// widen: the sibling the manifest leaves out and the private directory
// itself, by pool path or by host path, stay out of reach, the pool is
// read-only, and the pipeline still runs as the sandbox uid.
func TestPoolUnderPrivateDir(t *testing.T) {
	d := newRunDirs(t)
	home := filepath.Join(d.root, "home")
	dir := filepath.Join(home, "pool")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "data.csv"), "name,amount\nalpha,3\n")
	writeFile(t, filepath.Join(dir, ".env"), "API_KEY=sk-live-beside-the-pool\n")
	writeFile(t, filepath.Join(home, "diary.txt"), "PRIVATE-DIARY\n")
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	pool := []sandbox.Pool{{ID: "p", Dir: dir, Files: []string{"data.csv"}}}
	t.Run("reads the manifest's file as the sandbox uid", func(t *testing.T) {
		res := runHostile(t, sandbox.Spec{Argv: []string{"/bin/sh", "-c", "id -u; cat /pools/p/data.csv"}, Pools: pool})
		if res.ExitCode != 0 || string(res.Stdout) != "65534\nname,amount\nalpha,3\n" {
			t.Fatalf("stdout %q, stderr %q (exit %d)", res.Stdout, res.Stderr, res.ExitCode)
		}
	})
	for name, c := range map[string]struct{ verb, path string }{
		"sibling beside the pool file": {"read", "/pools/p/.env"},
		"file of the private dir":      {"read", "/pools/p/../diary.txt"},
		"private dir by host path":     {"list", home},
		"private file by host path":    {"read", filepath.Join(home, "diary.txt")},
		"pool dir by host path":        {"list", dir},
		"pool file written":            {"write", "/pools/p/data.csv"},
	} {
		t.Run(name, func(t *testing.T) {
			spec := hostileSpec(d, c.verb, c.path)
			spec.Pools = pool
			expectBlocked(t, runHostile(t, spec), "ENOENT", "EACCES", "EROFS")
		})
	}
}

// TestPoolFileUnreadable: root's bind widens which paths lead to a pool
// file, never who may read it. A manifest file the sandbox uid cannot read
// (0600, owned by another user — root here) refuses the run before the
// pipeline starts, with ErrPoolUnreadable naming the pool and the file by
// their sandbox names and no host path; the kernel decides (faccessat
// after the drop), so an ACL granting the uid read is honoured like o+r.
func TestPoolFileUnreadable(t *testing.T) {
	s := newSandbox(t)
	d := newRunDirs(t)
	file := filepath.Join(d.pool, "data.csv")
	run := func() (*sandbox.Result, error) {
		return s.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/cat", "/pools/p/data.csv"}, Pools: d.pools()})
	}
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := run()
	var se *sandbox.SetupError
	if !errors.Is(err, sandbox.ErrPoolUnreadable) || !errors.As(err, &se) || res != nil {
		t.Fatalf("0600 pool file: got %v, %+v; want ErrPoolUnreadable", err, res)
	}
	if !strings.Contains(se.Msg, `pool p: file "data.csv"`) || strings.Contains(se.Msg, d.root) || se.Errno != int(unix.EACCES) {
		t.Fatalf("message %q (errno %d): want the pool and file named, no host path, EACCES", se.Msg, se.Errno)
	}
	t.Run("readable by an ACL", func(t *testing.T) {
		if err := grantRead(file, 65534); err != nil {
			t.Skipf("no POSIX ACLs here: %v", err)
		}
		if res, err := run(); err != nil || res.ExitCode != 0 || !strings.HasPrefix(string(res.Stdout), "name,amount") {
			t.Fatalf("0600 file with an ACL for uid 65534: %v, %+v", err, res)
		}
	})
	t.Run("readable by others", func(t *testing.T) {
		if err := os.Chmod(file, 0o644); err != nil {
			t.Fatal(err)
		}
		if res, err := run(); err != nil || res.ExitCode != 0 || !strings.HasPrefix(string(res.Stdout), "name,amount") {
			t.Fatalf("0644 file: %v, %+v", err, res)
		}
	})
}

// grantRead gives uid read access to a 0600 file through a POSIX access
// ACL (the xattr setfacl writes: version 2, then tag/perm/id entries in
// tag order), leaving "others" without access.
func grantRead(name string, uid uint32) error {
	const (
		userObj, user, groupObj, mask, other = 0x01, 0x02, 0x04, 0x10, 0x20
		undefined                            = 0xffffffff
	)
	entries := [][3]uint32{{userObj, 6, undefined}, {user, 4, uid}, {groupObj, 0, undefined}, {mask, 4, undefined}, {other, 0, undefined}}
	acl := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range entries {
		acl = binary.LittleEndian.AppendUint16(acl, uint16(e[0]))
		acl = binary.LittleEndian.AppendUint16(acl, uint16(e[1]))
		acl = binary.LittleEndian.AppendUint32(acl, e[2])
	}
	return unix.Setxattr(name, "system.posix_acl_access", acl, 0)
}
