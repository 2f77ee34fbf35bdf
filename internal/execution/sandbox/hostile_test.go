//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

// The hostile pipeline suite. Every case must be contained AND the
// containment must be visible in the Result: a BLOCKED line with the errno
// the kernel returned, a kill reason, or a limit hit.

func runHostile(t *testing.T, spec sandbox.Spec) *sandbox.Result {
	t.Helper()
	s := newSandbox(t)
	res, err := s.Run(context.Background(), spec)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("exit=%d signal=%q killed=%v reason=%q limits=%v dur=%v\nstdout: %.300s\nstderr: %.300s",
		res.ExitCode, res.Signal, res.Killed, res.KillReason, res.LimitsHit, res.Duration,
		res.Stdout, res.Stderr)
	return res
}

// expectBlocked asserts the hostile program reported BLOCKED with one of
// the given errno names.
func expectBlocked(t *testing.T, res *sandbox.Result, errnos ...string) {
	t.Helper()
	out := string(res.Stdout)
	if res.ExitCode != 0 || !strings.HasPrefix(out, "BLOCKED ") {
		t.Fatalf("not blocked: exit %d, stdout %q, stderr %q", res.ExitCode, out, res.Stderr)
	}
	for _, e := range errnos {
		if strings.Contains(out, ": "+e+" ") {
			return
		}
	}
	t.Fatalf("blocked with %q, want one of %v", out, errnos)
}

func hostileSpec(d runDirs, args ...string) sandbox.Spec {
	return sandbox.Spec{
		Argv:     append([]string{hostilePath}, args...),
		ReadOnly: []string{fixtureDir},
		Pools:    d.pools(),
		Temp:     true,
		Collect:  collectInto(d.out),
		Limits:   sandbox.Limits{Wall: 10 * time.Second},
	}
}

// runLimited runs a hostile program with the limits limit sets on top of
// hostileSpec's: the set-up of every resource-limit test.
func runLimited(t *testing.T, prog string, limit func(*sandbox.Limits)) *sandbox.Result {
	t.Helper()
	spec := hostileSpec(newRunDirs(t), prog)
	limit(&spec.Limits)
	return runHostile(t, spec)
}

// hostListener listens on the host's loopback until the test ends: what a
// pipeline must not reach.
func hostListener(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// TestHostileTCP: a TCP connect to a listener the test opens on the host's
// loopback fails (Landlock denies connect: EACCES; the empty netns would
// give ENETUNREACH) and the listener never sees a connection.
func TestHostileTCP(t *testing.T) {
	d := newRunDirs(t)
	ln := hostListener(t)
	res := runHostile(t, hostileSpec(d, "tcp", ln.Addr().String()))
	expectBlocked(t, res, "EACCES", "ENETUNREACH")
	noConnectionQueued(t, ln)
}

// noConnectionQueued fails if ln holds a connection. Nothing accepts on
// ln while the run lasts: a connection the run made would wait in its
// backlog (the kernel completes the handshake), so one look afterwards is
// the verdict — no sleep for an accepting goroutine to catch up.
func noConnectionQueued(t *testing.T, ln net.Listener) {
	t.Helper()
	ln.(*net.TCPListener).SetDeadline(time.Now())
	if c, err := ln.Accept(); err == nil {
		c.Close()
		t.Fatal("the host listener got a connection")
	}
}

// TestHostileUDP: Landlock does not cover UDP; the empty network namespace
// does (ENETUNREACH), and the host's listener receives nothing.
func TestHostileUDP(t *testing.T) {
	d := newRunDirs(t)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	res := runHostile(t, hostileSpec(d, "udp", pc.LocalAddr().String()))
	expectBlocked(t, res, "ENETUNREACH")
	pc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, _, err := pc.ReadFrom(make([]byte, 64)); err == nil {
		t.Fatalf("listener received %d bytes", n)
	}
}

// TestHostileDNS: /etc/resolv.conf and /etc/hosts are not granted and no
// resolver is reachable.
func TestHostileDNS(t *testing.T) {
	d := newRunDirs(t)
	res := runHostile(t, hostileSpec(d, "dns", "example.com"))
	expectBlocked(t, res, "ENETUNREACH", "lookup")
}

// TestHostileMPTCP: Landlock ABI 7 does not mediate MPTCP; seccomp refuses
// the socket (EPERM) and the netns would have no route anyway.
func TestHostileMPTCP(t *testing.T) {
	d := newRunDirs(t)
	ln := hostListener(t)
	res := runHostile(t, hostileSpec(d, "mptcp", ln.Addr().String()))
	expectBlocked(t, res, "EPERM")
}

// TestHostileUnixSocket: AF_UNIX is refused by seccomp, even to a socket
// the host listens on in a directory the pipeline could name.
func TestHostileUnixSocket(t *testing.T) {
	d := newRunDirs(t)
	sock := filepath.Join(d.root, "host.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	os.Chmod(sock, 0o777)
	for _, c := range []string{"unix", "socketpair", "netlink"} {
		t.Run(c, func(t *testing.T) {
			expectBlocked(t, runHostile(t, hostileSpec(d, c, sock)), "EPERM")
		})
	}
}

// TestHostileSyscalls: the seccomp deny list (namespaces, ptrace, io_uring,
// bpf) answers EPERM.
func TestHostileSyscalls(t *testing.T) {
	d := newRunDirs(t)
	for _, c := range []string{"unshare", "ptrace", "io_uring", "bpf"} {
		t.Run(c, func(t *testing.T) {
			expectBlocked(t, runHostile(t, hostileSpec(d, c)), "EPERM")
		})
	}
}

// TestHostileKillHost: the server's PID does not exist in the pipeline's PID
// namespace (and Landlock scoping would refuse the signal anyway).
func TestHostileKillHost(t *testing.T) {
	d := newRunDirs(t)
	res := runHostile(t, hostileSpec(d, "kill", strconv.Itoa(os.Getpid())))
	expectBlocked(t, res, "ESRCH", "EPERM")
}

// TestHostileReadUnboundPool: a pool directory that was not given does not
// exist in the pipeline's root (and Landlock would refuse it), even though
// its files are world-readable; nor does the bound pool's host path.
func TestHostileReadUnboundPool(t *testing.T) {
	d := newRunDirs(t)
	t.Run("read", func(t *testing.T) {
		expectBlocked(t, runHostile(t, hostileSpec(d, "read", filepath.Join(d.secret, "secret.txt"))), "ENOENT", "EACCES")
	})
	t.Run("list", func(t *testing.T) {
		expectBlocked(t, runHostile(t, hostileSpec(d, "list", d.secret)), "ENOENT", "EACCES")
	})
	t.Run("bound pool by host path", func(t *testing.T) {
		expectBlocked(t, runHostile(t, hostileSpec(d, "read", filepath.Join(d.pool, "data.csv"))), "ENOENT")
	})
}

// TestHostileShadow: /etc/shadow is refused (it is not in the run's root;
// uid drop and no groups for DAC, and Landlock does not grant /etc
// wholesale).
func TestHostileShadow(t *testing.T) {
	d := newRunDirs(t)
	for _, p := range []string{"/etc/shadow", "/etc/hostname", "/proc/1/environ", "/root"} {
		t.Run(filepath.Base(p), func(t *testing.T) {
			c := "read"
			if p == "/root" {
				c = "list"
			}
			expectBlocked(t, runHostile(t, hostileSpec(d, c, p)), "EACCES", "ENOENT")
		})
	}
}

// TestHostileWritePool: the bound pool is read-only even when its
// directory and files are world-writable: /pools/p is a root-owned
// directory of the run's root, each file a read-only bind, and Landlock
// grants no write there.
func TestHostileWritePool(t *testing.T) {
	d := newRunDirs(t)
	if err := os.Chmod(d.pool, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(d.pool, "data.csv"), 0o666); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(filepath.Join(d.pool, "data.csv"))
	res := runHostile(t, hostileSpec(d, "write", "/pools/p/planted.csv"))
	expectBlocked(t, res, "EACCES", "EROFS")
	res = runHostile(t, hostileSpec(d, "write", "/pools/p/data.csv"))
	expectBlocked(t, res, "EACCES", "EROFS")
	if _, err := os.Stat(filepath.Join(d.pool, "planted.csv")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("file planted in pool: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(d.pool, "data.csv")); !bytes.Equal(before, after) {
		t.Fatalf("pool file changed: %q", after)
	}
}

// TestHostileWriteOutside: the host's /tmp and /dev/shm are world-writable,
// yet nothing outside the run's /out can be written (here without Spec.Temp:
// the sandbox's /tmp is then a read-only directory holding the fixtures).
func TestHostileWriteOutside(t *testing.T) {
	d := newRunDirs(t)
	spec := func(args ...string) sandbox.Spec {
		s := hostileSpec(d, args...)
		s.Temp = false
		return s
	}
	for _, p := range []string{
		filepath.Join(os.TempDir(), "airlock-escape-"+filepath.Base(d.root)),
		"/dev/shm/airlock-escape",
		"/sys/fs/cgroup/pids/cgroup.procs", // leaving the run's cgroup
		"/proc/sys/kernel/hostname",
		filepath.Join(d.root, "run", "beside-out.txt"),
	} {
		t.Run(filepath.Base(p), func(t *testing.T) {
			before, existed := os.ReadFile(p)
			expectBlocked(t, runHostile(t, spec("write", p)), "EACCES", "ENOENT", "EROFS")
			after, err := os.ReadFile(p)
			if existed != nil && !errors.Is(err, os.ErrNotExist) {
				os.Remove(p)
				t.Fatalf("%s was created", p)
			}
			// (Kernel files such as cgroup.procs change on their own; for
			// them the EACCES above is the evidence.)
			volatile := strings.HasPrefix(p, "/sys/") || strings.HasPrefix(p, "/proc/")
			if existed == nil && !volatile && !bytes.Equal(before, after) {
				t.Fatalf("%s was changed", p)
			}
		})
	}
	t.Run("declared", func(t *testing.T) { // control: the out dir works
		res := runHostile(t, spec("write", "/out/ok.txt"))
		if res.ExitCode != 1 || !strings.HasPrefix(string(res.Stdout), "ESCAPED") {
			t.Fatalf("writing the out dir failed: %s", res.Stdout)
		}
		if _, err := os.Stat(filepath.Join(d.out, "ok.txt")); err != nil {
			t.Fatalf("not collected: %v", err)
		}
	})
}

// TestHostileSymlinkSecret: a symlink to /etc/shadow planted in the output
// directory does not make the secret readable inside the sandbox (it is not
// in the run's root; Landlock checks the target too). The workspace refuses
// to collect it (workspace tests).
func TestHostileSymlinkSecret(t *testing.T) {
	res := runHostile(t, sandbox.Spec{
		Argv:     []string{"/bin/sh", filepath.Join(fixtureDir, "symlink_secret.sh"), sandbox.OutDir},
		ReadOnly: []string{fixtureDir},
	})
	if res.ExitCode != 0 || !bytes.Contains(res.Stdout, []byte("BLOCKED symlink")) ||
		bytes.Contains(res.Stdout, []byte("root:")) {
		t.Fatalf("symlink read: %s", res.Stdout)
	}
}

// TestHostileSetsid: a daemon in its own session cannot outlive the run's
// kill, because killing PID 1 of the namespace kills the namespace. The
// run is killed once the daemon is seen running from the host (its
// cancellation takes the wall clock's path, killer.kill), so a loaded
// machine that starts it late cannot make the test void (it did with a
// 3 s wall); the two minutes are a hang guard.
func TestHostileSetsid(t *testing.T) {
	d := newRunDirs(t)
	marker := "airlock-setsid-" + d.root // unique: other test processes may run this test concurrently
	var before, after []byte
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			for _, pid := range processesWith(marker) {
				if b, _ := os.ReadFile("/proc/" + pid + "/cmdline"); bytes.Contains(b, []byte("echo beat")) {
					cancel() // the daemon runs: end the run
					return
				}
			}
		}
	}()
	res, err := newSandbox(t).Run(ctx, sandbox.Spec{
		Argv:     []string{"/bin/sh", filepath.Join(fixtureDir, "setsid_escape.sh"), sandbox.OutDir, marker},
		ReadOnly: []string{fixtureDir},
		Limits:   sandbox.Limits{Wall: 3 * time.Minute},
		// The run's tmpfs is still alive while Collect runs: a surviving
		// daemon would keep growing the heartbeat.
		Collect: func(out *os.Root) error {
			before, _ = out.ReadFile("heartbeat")
			time.Sleep(300 * time.Millisecond)
			after, _ = out.ReadFile("heartbeat")
			return nil
		},
	})
	if res == nil || !res.Killed || res.KillReason != sandbox.KillCanceled {
		t.Fatalf("want the run killed once the daemon ran, got %+v, %v", res, err)
	}
	if len(after) != len(before) {
		t.Fatalf("heartbeat grew from %d to %d bytes after the kill", len(before), len(after))
	}
	if pids := processesWith(marker); len(pids) > 0 {
		t.Fatalf("processes survived: %v", pids)
	}
	checkNoLeftoverCgroups(t)
}

// processesWith scans the host's /proc for a marker in any command line.
func processesWith(marker string) []string {
	var found []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			found = append(found, e.Name())
		}
	}
	return found
}

// TestHostileForkBomb: the pids cgroup refuses forks past Limits.Procs
// (LimitsHit "procs"), the wall clock ends the run, and nothing survives.
func TestHostileForkBomb(t *testing.T) {
	res := runHostile(t, sandbox.Spec{
		Argv:     []string{"/bin/sh", filepath.Join(fixtureDir, "forkbomb.sh")},
		ReadOnly: []string{fixtureDir},
		Limits:   sandbox.Limits{Wall: 3 * time.Second, Procs: 32},
	})
	// Either the wall clock ends it, or the bomb starves its own PID 1 of
	// forks (sh: "Cannot fork") and PID 1's exit ends the namespace; both
	// are containment. What must hold: the pids limit refused forks, and
	// nothing is left.
	if !contains(res.LimitsHit, "procs") || (res.Killed && res.KillReason != sandbox.KillWallTime) {
		t.Fatalf("want the procs limit hit, got killed=%v reason=%q limits=%v",
			res.Killed, res.KillReason, res.LimitsHit)
	}
	if pids := processesWith(filepath.Join(fixtureDir, "forkbomb.sh")); len(pids) > 0 {
		t.Fatalf("fork bomb processes survived: %v", pids)
	}
	checkNoLeftoverCgroups(t)
}

// checkNoLeftoverCgroups: every run cgroup the shared sandbox created has
// been removed (the v1 layout of the reference machines: memory and pids).
func checkNoLeftoverCgroups(t *testing.T) {
	t.Helper()
	own, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	startedMu.Lock()
	names := append([]string(nil), startedCgroups...)
	startedMu.Unlock()
	if len(names) == 0 {
		t.Fatal("no runs recorded (test is void)")
	}
	for _, line := range strings.Split(string(own), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || (parts[1] != "memory" && parts[1] != "pids") {
			continue
		}
		for _, n := range names {
			p := filepath.Join("/sys/fs/cgroup", parts[1], parts[2], n)
			if _, err := os.Stat(p); err == nil {
				t.Errorf("leftover cgroup %s", p)
			}
		}
	}
}

// TestHostileMemoryBomb: the memory cgroup's OOM killer ends the run.
func TestHostileMemoryBomb(t *testing.T) {
	res := runLimited(t, "membomb", func(l *sandbox.Limits) { l.MemoryBytes = 64 << 20 })
	if !res.Killed || res.KillReason != sandbox.KillMemory || res.Signal != "SIGKILL" {
		t.Fatalf("want memory kill, got %+v", res)
	}
	if res.MaxRSSBytes > 80<<20 {
		t.Fatalf("peak memory %d above the limit", res.MaxRSSBytes)
	}
}

// TestHostileSpin: an endless loop is ended by RLIMIT_CPU (SIGXCPU) well
// before the wall clock.
func TestHostileSpin(t *testing.T) {
	res := runLimited(t, "spin", func(l *sandbox.Limits) {
		l.CPU = time.Second
		l.Wall = time.Minute // two shared cores under load: CPU time accrues slowly
	})
	if !res.Killed || res.KillReason != sandbox.KillCPUTime {
		t.Fatalf("want cpu_time kill, got %+v", res)
	}
	if res.UserCPU+res.SysCPU < 900*time.Millisecond {
		t.Fatalf("only %v CPU used", res.UserCPU+res.SysCPU)
	}
}

// TestHostileSleep: a process that neither computes nor exits is ended by
// the wall clock.
func TestHostileSleep(t *testing.T) {
	res := runHostile(t, sandbox.Spec{
		Argv:   []string{"/bin/sleep", "1000"},
		Limits: sandbox.Limits{Wall: 300 * time.Millisecond},
	})
	if !res.Killed || res.KillReason != sandbox.KillWallTime || res.Duration > 3*time.Second {
		t.Fatalf("want prompt wall_time kill, got %+v", res)
	}
}

// TestHostileFileSize: RLIMIT_FSIZE stops a file from growing past the
// limit. The pipeline is PID 1 of its namespace, and the kernel does not
// deliver default-action SIGXFSZ to a namespace's init, so the write fails
// with EFBIG instead; a child process would die of SIGXFSZ.
func TestHostileFileSize(t *testing.T) {
	d := newRunDirs(t)
	res := runHostile(t, sandbox.Spec{
		Argv:    []string{"/bin/dd", "if=/dev/zero", "of=/out/big", "bs=1M", "count=4"},
		Collect: collectInto(d.out),
		Limits:  sandbox.Limits{FileSizeBytes: 1 << 20},
	})
	if res.ExitCode == 0 || !bytes.Contains(res.Stderr, []byte("File too large")) {
		t.Fatalf("dd was not stopped: %+v", res)
	}
	if st, err := os.Stat(filepath.Join(d.out, "big")); err != nil || st.Size() > 1<<20 {
		t.Fatalf("file grew past the limit: %v", err)
	}
}

// TestHostileFlood: captured output stops at the cap, memory does not grow,
// and a sustained flood is killed with KillReason "output".
func TestHostileFlood(t *testing.T) {
	res := runLimited(t, "flood", func(l *sandbox.Limits) { l.OutputBytes = 64 << 10 })
	if len(res.Stdout) != 64<<10 || !res.StdoutTruncated {
		t.Fatalf("stdout %d bytes, truncated=%v", len(res.Stdout), res.StdoutTruncated)
	}
	if !res.Killed || res.KillReason != sandbox.KillOutput {
		t.Fatalf("want output kill, got %+v", res)
	}
}

// TestHostileInt80: a 64-bit process issuing a 32-bit syscall via int 0x80
// is killed by the seccomp arch check (SIGSYS). Outside the sandbox the
// same call succeeds on this kernel, so the test is not vacuous.
func TestHostileInt80(t *testing.T) {
	newSandbox(t) // builds the fixtures
	d := newRunDirs(t)
	out, _ := exec.Command(hostilePath, "int80").Output()
	if bytes.HasPrefix(out, []byte("SKIP")) {
		t.Skipf("%s", out)
	}
	if !bytes.HasPrefix(out, []byte("ESCAPED int80")) {
		t.Skipf("kernel has no 32-bit syscall entry (IA32 emulation off): %q", out)
	}
	res := runHostile(t, hostileSpec(d, "int80"))
	if res.Signal != "SIGSYS" || res.KillReason != sandbox.KillSeccomp {
		t.Fatalf("want SIGSYS, got %+v", res)
	}
}

// TestHostileX32: x32-ABI syscall numbers (bit 30 set) share the amd64
// audit arch, so the filter kills them by number.
func TestHostileX32(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("x32 exists on amd64 only")
	}
	d := newRunDirs(t)
	res := runHostile(t, hostileSpec(d, "x32"))
	if res.Signal != "SIGSYS" || res.KillReason != sandbox.KillSeccomp {
		t.Fatalf("want SIGSYS, got %+v", res)
	}
}

// TestHostile32BitELF: a genuine i386 executable (hand-assembled: exit(42)
// via int 0x80) dies at its first syscall inside the sandbox.
func TestHostile32BitELF(t *testing.T) {
	newSandbox(t)
	d := newRunDirs(t)
	bin := filepath.Join(d.root, "bin32")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(bin, "exit42")
	if err := os.WriteFile(prog, elf32Exit42(), 0o755); err != nil {
		t.Fatal(err)
	}
	err := exec.Command(prog).Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 42 {
		t.Skipf("kernel cannot run i386 binaries (%v)", err)
	}
	res := runHostile(t, sandbox.Spec{Argv: []string{prog}, ReadOnly: []string{bin}})
	if res.Signal != "SIGSYS" || res.KillReason != sandbox.KillSeccomp {
		t.Fatalf("want SIGSYS, got %+v", res)
	}
}

// elf32Exit42 builds a minimal static i386 ELF: mov eax,1; mov ebx,42; int 0x80.
func elf32Exit42() []byte {
	const base = 0x08048000
	code := []byte{0xb8, 1, 0, 0, 0, 0xbb, 42, 0, 0, 0, 0xcd, 0x80}
	var b bytes.Buffer
	le := binary.LittleEndian
	b.Write([]byte{0x7f, 'E', 'L', 'F', 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	for _, v := range []any{
		uint16(2), uint16(3), uint32(1), uint32(base + 52 + 32), uint32(52), uint32(0),
		uint32(0), uint16(52), uint16(32), uint16(1), uint16(0), uint16(0), uint16(0),
		// program header: PT_LOAD of the whole file, R+X
		uint32(1), uint32(0), uint32(base), uint32(base), uint32(52 + 32 + len(code)),
		uint32(52 + 32 + len(code)), uint32(5), uint32(0x1000),
	} {
		binary.Write(&b, le, v)
	}
	b.Write(code)
	return b.Bytes()
}

// TestHostileCancel: the caller's context ends the run like the wall clock,
// whether it fires during setup or while the pipeline runs.
func TestHostileCancel(t *testing.T) {
	s := newSandbox(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := s.Run(ctx, sandbox.Spec{Argv: []string{"/bin/true"}}); res != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("done context: got %v, %+v", err, res)
	}
	for _, after := range []time.Duration{time.Millisecond, 5 * time.Millisecond, 200 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), after)
		res, err := s.Run(ctx, sandbox.Spec{Argv: []string{"/bin/sleep", "1000"}})
		cancel()
		if res == nil && errors.Is(err, context.DeadlineExceeded) {
			continue // the deadline passed before Run started anything: also correct (on a loaded machine, even at 200 ms)
		}
		if !errors.Is(err, context.DeadlineExceeded) || res == nil || res.KillReason != sandbox.KillCanceled {
			t.Fatalf("after %v: got %v, %+v", after, err, res)
		}
	}
	// Cancelled once the program is seen running (not after a guessed
	// delay): the run is killed, reason "canceled".
	marker := "airlock-cancel-" + t.Name() + strconv.FormatInt(time.Now().UnixNano(), 36)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if len(processesWith(marker)) > 0 {
				cancel()
				return
			}
		}
	}()
	res, err := s.Run(ctx, sandbox.Spec{Argv: []string{"/bin/sh", "-c", "sleep 1000", marker}, Limits: sandbox.Limits{Wall: 3 * time.Minute}})
	if !errors.Is(err, context.Canceled) || res == nil || res.KillReason != sandbox.KillCanceled {
		t.Fatalf("cancelled while running: got %v, %+v", err, res)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
