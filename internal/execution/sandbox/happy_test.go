//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

func TestReport(t *testing.T) {
	s := newSandbox(t)
	rep := s.Report()
	t.Logf("\n%s", rep)
	if !rep.Ready() {
		t.Fatalf("not ready: %v", rep.Missing())
	}
	for _, name := range []string{sandbox.MechNamespaces, sandbox.MechRootFS, sandbox.MechLandlock, sandbox.MechSeccomp,
		sandbox.MechUIDDrop, sandbox.MechCgroupMemory, sandbox.MechCgroupPids, sandbox.MechSelfTest} {
		if m, ok := rep.Get(name); !ok || !m.Active {
			t.Errorf("%s not active: %+v", name, m)
		}
	}
}

// TestIdentity: the pipeline is PID 1 of its namespace, runs as nobody with
// no supplementary groups, and sees exactly the environment it was given.
func TestIdentity(t *testing.T) {
	s := newSandbox(t)
	res, err := s.Run(context.Background(), sandbox.Spec{
		Argv:     []string{hostilePath, "ids"},
		ReadOnly: []string{fixtureDir},
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := "uid=65534 euid=65534 gid=65534 groups=[] pid=1 host=airlock"; !strings.Contains(string(res.Stdout), want) {
		t.Errorf("stdout %q, want %q", res.Stdout, want)
	}
	for _, m := range []string{"namespaces:net,pid,ipc,uts,mnt", "mount_ns:private_root", "no_new_privs", "landlock:abi", "seccomp:"} {
		if !strings.Contains(strings.Join(res.Mechanisms, " "), m) {
			t.Errorf("mechanisms %v lack %q", res.Mechanisms, m)
		}
	}

	res, err = s.Run(context.Background(), sandbox.Spec{
		Argv: []string{"/usr/bin/env"},
		Env:  []string{"LANG=C", "AIRLOCK_RUN=1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res.Stdout), "LANG=C\nAIRLOCK_RUN=1\nPATH="+sandbox.DefaultPath+"\n"; got != want {
		t.Errorf("env %q, want %q", got, want)
	}
}

// TestAwkCSV: the first happy path. The pipeline is /bin/sh with a script
// file (argv, not `sh -c`), reads a CSV from a read-only pool with awk and
// writes a declared output.
func TestAwkCSV(t *testing.T) {
	s := newSandbox(t)
	d := newRunDirs(t)
	out := filepath.Join(d.out, "summary.txt")
	res, err := s.Run(context.Background(), sandbox.Spec{
		Argv:     []string{"/bin/sh", filepath.Join(fixtureDir, "csv_summary.sh"), "/pools/p/data.csv", "/out/summary.txt"},
		ReadOnly: []string{fixtureDir},
		Pools:    d.pools(),
		Collect:  collectInto(d.out),
		Limits:   sandbox.Limits{Wall: 10 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || res.Killed {
		t.Fatalf("exit %d %s: %s", res.ExitCode, res.KillReason, res.Stderr)
	}
	got, err := os.ReadFile(out)
	if err != nil || string(got) != "rows=3 sum=12\n" {
		t.Fatalf("output %q, %v", got, err)
	}
}

// TestPython: python3 (looked up in PATH after confinement) runs with only
// the system rules, without /proc.
func TestPython(t *testing.T) {
	s := newSandbox(t)
	if _, err := exec.LookPath("/usr/bin/python3"); err != nil {
		t.Skip("python3 not installed in /usr/bin")
	}
	d := newRunDirs(t)
	out := filepath.Join(d.out, "summary.json")
	res, err := s.Run(context.Background(), sandbox.Spec{
		Argv:     []string{"python3", filepath.Join(fixtureDir, "csv_summary.py"), "/pools/p/data.csv", "/out/summary.json"},
		ReadOnly: []string{fixtureDir},
		Pools:    d.pools(),
		Temp:     true,
		Collect:  collectInto(d.out),
		Env:      []string{"TMPDIR=/tmp", "PYTHONDONTWRITEBYTECODE=1"},
		Limits:   sandbox.Limits{Wall: 20 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, res.Stderr)
	}
	if got, _ := os.ReadFile(out); string(got) != `{"rows": 3, "sum": 12}` {
		t.Fatalf("output %q", got)
	}
}

// TestStdinAndExitCode: stdin is delivered, exit codes come back.
func TestStdinAndExitCode(t *testing.T) {
	s := newSandbox(t)
	res, err := s.Run(context.Background(), sandbox.Spec{
		Argv:  []string{"/usr/bin/wc", "-l"},
		Stdin: []byte("a\nb\nc\n"),
	})
	if err != nil || strings.TrimSpace(string(res.Stdout)) != "3" {
		t.Fatalf("wc: %v %+v", err, res)
	}
	res, err = s.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/false"}})
	if err != nil || res.ExitCode != 1 || res.Killed || res.Signal != "" {
		t.Fatalf("false: %v %+v", err, res)
	}
	// The floors (8 tasks, 16 MiB) leave the trampoline room to start.
	res, err = s.Run(context.Background(), sandbox.Spec{
		Argv:   []string{"/bin/true"},
		Limits: sandbox.Limits{Procs: 1, MemoryBytes: 1, OpenFiles: 1, CPU: time.Millisecond, DiskBytes: 1},
	})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("tiny limits: %v %+v", err, res)
	}
}

// TestSetupErrors: problems are typed errors, not Results.
func TestSetupErrors(t *testing.T) {
	s := newSandbox(t)
	d := newRunDirs(t)
	ctx := context.Background()
	pool := func(id string, files ...string) []sandbox.Pool {
		return []sandbox.Pool{{ID: id, Dir: d.pool, Files: files}}
	}
	invalid := map[string]sandbox.Spec{
		"empty argv":        {},
		"relative ro":       {Argv: []string{"/bin/true"}, ReadOnly: []string{"pool"}},
		"missing ro":        {Argv: []string{"/bin/true"}, ReadOnly: []string{"/nonexistent-airlock"}},
		"ro root":           {Argv: []string{"/bin/true"}, ReadOnly: []string{"/"}},
		"ro /tmp whole":     {Argv: []string{"/bin/true"}, ReadOnly: []string{"/tmp"}},
		"ro device":         {Argv: []string{"/bin/true"}, ReadOnly: []string{"/dev/sda"}},
		"ro proc":           {Argv: []string{"/bin/true"}, ReadOnly: []string{"/proc/self"}},
		"negative limit":    {Argv: []string{"/bin/true"}, Limits: sandbox.Limits{Wall: -1}},
		"negative disk":     {Argv: []string{"/bin/true"}, Limits: sandbox.Limits{DiskBytes: -1}},
		"env without equal": {Argv: []string{"/bin/true"}, Env: []string{"PATH"}},
		"relative dir":      {Argv: []string{"/bin/true"}, Dir: "out"},
		"pool id dots":      {Argv: []string{"/bin/true"}, Pools: pool("..", "data.csv")},
		"pool id slash":     {Argv: []string{"/bin/true"}, Pools: pool("a/b", "data.csv")},
		"pool file dotdot":  {Argv: []string{"/bin/true"}, Pools: pool("p", "../secret-pool/secret.txt")},
		"pool file abs":     {Argv: []string{"/bin/true"}, Pools: pool("p", "/etc/passwd")},
		"pool dir missing":  {Argv: []string{"/bin/true"}, Pools: []sandbox.Pool{{ID: "p", Dir: "/nonexistent-airlock"}}},
		"pool dir relative": {Argv: []string{"/bin/true"}, Pools: []sandbox.Pool{{ID: "p", Dir: "pool"}}},
	}
	for name, spec := range invalid {
		t.Run(name, func(t *testing.T) {
			if _, err := s.Run(ctx, spec); !errors.Is(err, sandbox.ErrInvalidSpec) {
				t.Fatalf("got %v, want ErrInvalidSpec", err)
			}
		})
	}
	t.Run("not found", func(t *testing.T) {
		_, err := s.Run(ctx, sandbox.Spec{Argv: []string{"no-such-program-airlock"}})
		var se *sandbox.SetupError
		if !errors.As(err, &se) || se.Stage != "exec" || !errors.Is(err, sandbox.ErrSetup) {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("not executable (W^X)", func(t *testing.T) {
		// A binary the pipeline writes into /out or /tmp cannot be
		// executed: the tmpfs is noexec and Landlock grants no EXECUTE.
		for _, dir := range []string{"/out", "/tmp"} {
			res, err := s.Run(ctx, sandbox.Spec{Temp: true, Argv: []string{"/bin/sh", "-c",
				"cp /bin/true " + dir + "/t && chmod 755 " + dir + "/t && exec " + dir + "/t"}})
			if err != nil || res.ExitCode != 126 || !bytes.Contains(res.Stderr, []byte("Permission denied")) {
				t.Fatalf("%s: got %v %+v", dir, err, res)
			}
		}
	})
}

// TestNewFailsClosed: New refuses a trampoline that does not work; here the
// race-enabled test binary itself, which is built with cgo and refuses.
func TestNewFailsClosed(t *testing.T) {
	newSandbox(t)
	if sandbox.BuiltWithCgo() {
		_, err := sandbox.New(&sandbox.Options{TrampolinePath: os.Args[0]})
		if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), "cgo") {
			t.Fatalf("got %v, want ErrUnavailable naming cgo", err)
		}
	}
	_, err := sandbox.New(&sandbox.Options{TrampolinePath: "/nonexistent/airlock"})
	if !errors.Is(err, sandbox.ErrInvalidSpec) {
		t.Fatalf("got %v", err)
	}
	_, err = sandbox.New(&sandbox.Options{TrampolinePath: trampolinePath, UID: -5})
	if !errors.Is(err, sandbox.ErrInvalidSpec) {
		t.Fatalf("got %v", err)
	}
}

// TestConcurrentRuns: runs are independent (own namespaces and cgroups) and
// the parent side is race-free.
func TestConcurrentRuns(t *testing.T) {
	s := newSandbox(t)
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() {
			res, err := s.Run(context.Background(), sandbox.Spec{
				Argv: []string{hostilePath, "ids"}, ReadOnly: []string{fixtureDir},
			})
			if err == nil && !strings.Contains(string(res.Stdout), "pid=1") {
				err = errors.New(string(res.Stdout))
			}
			errs <- err
		}()
	}
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestRlimits: the rlimits are in force inside the pipeline (dash prints
// NOFILE in files, CPU in seconds, FSIZE in 512-byte blocks).
func TestRlimits(t *testing.T) {
	s := newSandbox(t)
	res, err := s.Run(context.Background(), sandbox.Spec{
		Argv:     []string{"/bin/sh", filepath.Join(fixtureDir, "limits.sh")},
		ReadOnly: []string{fixtureDir},
		Limits:   sandbox.Limits{OpenFiles: 64, CPU: 3 * time.Second, FileSizeBytes: 1 << 20, Procs: 16},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(res.Stdout)), "nofile=64 core=0 cpu=3 fsize=2048 nproc=512"; got != want {
		t.Fatalf("limits %q, want %q (stderr %s)", got, want, res.Stderr)
	}
}
