//go:build linux

package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

// The run's own root filesystem (mounts.go): pools by manifest, the disk
// quota, stable paths.

// manifestPool is a pool directory holding more than its manifest lists: a
// .env, a private key and an unlisted file beside the listed ones.
func manifestPool(t *testing.T, d runDirs) sandbox.Pool {
	t.Helper()
	writeFile(t, filepath.Join(d.pool, ".env"), "API_KEY=sk-live-airlock-secret\n")
	writeFile(t, filepath.Join(d.pool, "id_rsa"), "-----BEGIN PRIVATE KEY-----\n")
	if err := os.Mkdir(filepath.Join(d.pool, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d.pool, "sub", "q1.csv"), "q1\n")
	writeFile(t, filepath.Join(d.pool, "sub", "unlisted.csv"), "unlisted\n")
	return sandbox.Pool{ID: "p", Dir: d.pool, Files: []string{"data.csv", "sub/q1.csv"}}
}

// TestHostilePoolOnlyManifest (issue #10 item 8): a pipeline sees exactly
// the manifest's files. The .env beside them — refused by read_pool_file
// because the manifest does not list it — does not exist in the sandbox
// either; before the run's own root, the pool directory was readable whole.
func TestHostilePoolOnlyManifest(t *testing.T) {
	d := newRunDirs(t)
	pool := manifestPool(t, d)
	spec := func(args ...string) sandbox.Spec {
		s := hostileSpec(d, args...)
		s.Pools = []sandbox.Pool{pool}
		return s
	}
	for _, name := range []string{".env", "id_rsa", "sub/unlisted.csv"} {
		t.Run(name, func(t *testing.T) {
			expectBlocked(t, runHostile(t, spec("read", "/pools/p/"+name)), "ENOENT")
		})
	}
	t.Run("listing", func(t *testing.T) {
		res := runHostile(t, sandbox.Spec{Argv: []string{"/bin/ls", "-A", "-R", "/pools"}, Pools: []sandbox.Pool{pool}})
		want := "/pools:\np\n\n/pools/p:\ndata.csv\nsub\n\n/pools/p/sub:\nq1.csv\n"
		if res.ExitCode != 0 || string(res.Stdout) != want {
			t.Fatalf("ls -AR /pools = %q (exit %d), want %q", res.Stdout, res.ExitCode, want)
		}
	})
	t.Run("listed files readable", func(t *testing.T) {
		res := runHostile(t, sandbox.Spec{Argv: []string{"/bin/cat", "/pools/p/data.csv", "/pools/p/sub/q1.csv"}, Pools: []sandbox.Pool{pool}})
		if res.ExitCode != 0 || string(res.Stdout) != "name,amount\nalpha,3\nbeta,4\ngamma,5\nq1\n" {
			t.Fatalf("cat = %q (exit %d, %s)", res.Stdout, res.ExitCode, res.Stderr)
		}
	})
}

// TestHostilePoolSymlinkEscape: a manifest name is resolved beneath the pool
// directory. A listed name that is (or was swapped for) a symlink leaving
// the pool, a FIFO or a directory refuses the run at stage "mounts"; a
// symlink that stays inside works, like read_pool_file.
func TestHostilePoolSymlinkEscape(t *testing.T) {
	s := newSandbox(t)
	d := newRunDirs(t)
	for name, target := range map[string]string{
		"abs":    "/etc/passwd",
		"up":     "../secret-pool/secret.txt",
		"inside": "data.csv",
	} {
		if err := os.Symlink(target, filepath.Join(d.pool, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(d.pool, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(d.pool, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"abs", "up", "fifo", "dir", "missing"} {
		t.Run(name, func(t *testing.T) {
			res, err := s.Run(context.Background(), sandbox.Spec{
				Argv:  []string{"/bin/cat", "/pools/p/" + name},
				Pools: []sandbox.Pool{{ID: "p", Dir: d.pool, Files: []string{name}}},
			})
			var se *sandbox.SetupError
			if !errors.As(err, &se) || se.Stage != "mounts" || res != nil {
				t.Fatalf("got %v, %+v; want a setup error at stage mounts", err, res)
			}
		})
	}
	t.Run("inside", func(t *testing.T) {
		res := runHostile(t, sandbox.Spec{
			Argv:  []string{"/bin/cat", "/pools/p/inside"},
			Pools: []sandbox.Pool{{ID: "p", Dir: d.pool, Files: []string{"inside"}}},
		})
		if res.ExitCode != 0 || !strings.HasPrefix(string(res.Stdout), "name,amount") {
			t.Fatalf("cat inside = %q (exit %d)", res.Stdout, res.ExitCode)
		}
	})
}

// fillScript writes 1 MiB files until one fails; it prints where.
const fillScript = `i=0
while [ $i -lt "$2" ]; do
  i=$((i+1))
  dd if=/dev/zero of="$1/f$i" bs=1M count=1 2>/dev/null || { echo "refused at $i"; exit 3; }
done
echo "wrote $i"`

func hostFree(t *testing.T) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(os.TempDir(), &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}

// TestHostileDiskQuota (issue #10 item 9): 200 × 1 MB of undeclared files
// stop at the run's quota (16 MiB here) with ENOSPC inside the pipeline and
// the limit "disk" in the Result; the host's disk is not written at all.
// /out and /tmp share the quota, and the next run starts empty.
func TestHostileDiskQuota(t *testing.T) {
	d := newRunDirs(t)
	const quota = 16 << 20
	freeBefore := hostFree(t)
	run := func(dir string, files int) *sandbox.Result {
		return runHostile(t, sandbox.Spec{
			Argv:   []string{"/bin/sh", "-c", fillScript, "fill", dir, strconv.Itoa(files)},
			Temp:   true,
			Limits: sandbox.Limits{DiskBytes: quota, Wall: 30 * time.Second},
		})
	}
	res := run("/out", 200)
	if res.ExitCode != 3 || !strings.HasPrefix(string(res.Stdout), "refused at ") {
		t.Fatalf("200 MB were written under a 16 MiB quota: %q", res.Stdout)
	}
	if !contains(res.LimitsHit, sandbox.LimitDisk) || res.DiskBytes > quota || res.DiskBytes < quota-(1<<20) {
		t.Fatalf("limits %v, disk bytes %d; want %q hit near %d", res.LimitsHit, res.DiskBytes, sandbox.LimitDisk, quota)
	}
	if drop := freeBefore - hostFree(t); drop > 100<<20 {
		t.Fatalf("host free space dropped by %d bytes", drop)
	}
	if ents, _ := os.ReadDir(d.out); len(ents) != 0 {
		t.Fatalf("files reached the host: %v", ents)
	}
	t.Run("tmp shares the quota", func(t *testing.T) {
		res := runHostile(t, sandbox.Spec{
			Argv: []string{"/bin/sh", "-c", "dd if=/dev/zero of=/tmp/a bs=1M count=10 && dd if=/dev/zero of=/out/b bs=1M count=10"},
			Temp: true, Limits: sandbox.Limits{DiskBytes: quota},
		})
		if res.ExitCode == 0 || !bytes.Contains(res.Stderr, []byte("No space left on device")) || !contains(res.LimitsHit, sandbox.LimitDisk) {
			t.Fatalf("20 MiB fit a 16 MiB quota: %+v", res)
		}
	})
	t.Run("next run starts empty", func(t *testing.T) {
		if res := run("/out", 8); res.ExitCode != 0 || contains(res.LimitsHit, sandbox.LimitDisk) {
			t.Fatalf("8 MiB refused after an earlier full run: %q %v", res.Stdout, res.LimitsHit)
		}
	})
}

// TestHostileStablePaths (issue #10 item 10): the pipeline's working
// directory is /out, / cannot be listed, /proc (whose mountinfo would name the host paths the binds came from) is
// not there, and — read from the host while it runs — its mount table
// holds only the stable paths: no run directory, no pool's host path, none
// of the host's other mounts.
func TestHostileStablePaths(t *testing.T) {
	d := newRunDirs(t)
	marker := "airlock-paths-" + filepath.Base(d.root)
	res := runHostile(t, sandbox.Spec{
		Argv:  []string{"/bin/sh", "-c", `pwd; echo "$AIRLOCK_OUT"; cat /proc/self/mountinfo 2>/dev/null || echo no-mountinfo; ls -A / 2>/dev/null || echo no-listing`, marker},
		Env:   []string{"AIRLOCK_OUT=" + sandbox.OutDir},
		Pools: d.pools(),
	})
	lines := strings.Split(strings.TrimSpace(string(res.Stdout)), "\n")
	// Landlock grants no read on "/" itself: the root cannot be listed.
	if got := strings.Join(lines, " "); res.ExitCode != 0 || got != "/out /out no-mountinfo no-listing" {
		t.Fatalf("stdout %q", res.Stdout)
	}

	// From the host, while it runs: the pipeline's own mount table. The
	// run lasts until the test has looked (it is cancelled then), so no
	// race between a loaded machine's slow start and a short sleep decides
	// whether it is seen; the two minutes are a hang guard. (It flaked
	// under load with `sleep 5` and a 5 s window.)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *sandbox.Result, 1)
	go func() {
		s := newSandbox(t)
		r, _ := s.Run(ctx, sandbox.Spec{
			Argv: []string{"/bin/sh", "-c", "sleep 600", marker}, ReadOnly: []string{fixtureDir}, Pools: d.pools(), Temp: true,
			Limits: sandbox.Limits{Wall: 10 * time.Minute},
		})
		done <- r
	}()
	var mountinfo []byte
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && mountinfo == nil; time.Sleep(20 * time.Millisecond) {
		for _, pid := range processesWith(marker) {
			if b, err := os.ReadFile("/proc/" + pid + "/mountinfo"); err == nil && len(b) > 0 {
				mountinfo = b
			}
		}
	}
	cancel()
	<-done
	if mountinfo == nil {
		t.Fatal("never saw the pipeline's mount table (test is void)")
	}
	allowed := []string{"/usr", "/etc/", "/dev/", "/pools/p/data.csv", fixtureDir}
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	n := 0
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		mp := f[4]
		ok := mp == "/"
		for _, a := range allowed {
			ok = ok || mp == a || strings.HasPrefix(mp, a)
		}
		if !ok || strings.Contains(mp, d.root) && mp != fixtureDir {
			t.Errorf("mount point %q in the pipeline's namespace", mp)
		}
		n++
	}
	t.Logf("%d mounts, all at stable paths:\n%s", n, mountinfo)
	if n < 5 {
		t.Fatalf("only %d mounts seen: %s", n, mountinfo)
	}
}
