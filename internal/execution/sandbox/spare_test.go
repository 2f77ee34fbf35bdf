//go:build linux

package sandbox_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

// Spares (spare.go): a trampoline started before its run. These tests use
// a Sandbox of their own, so the spare they look at is the one its next run
// takes; the shared sandbox of the other tests has a spare too, so every
// test of this package runs through the spare path (or, when a run finds no
// spare ready, the start it falls back to).

// spareSandbox is a fresh Sandbox with a spare, closed when the test ends,
// and the log lines it wrote.
func spareSandbox(t *testing.T) (*sandbox.Sandbox, *logLines) {
	t.Helper()
	newSandbox(t) // fixtures, skips
	lines := &logLines{}
	s, err := sandbox.New(&sandbox.Options{TrampolinePath: trampolinePath, Spare: true, Logger: slog.New(lines)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, lines
}

// logLines is a slog.Handler keeping every message.
type logLines struct {
	mu   sync.Mutex
	msgs []string
}

func (*logLines) Enabled(context.Context, slog.Level) bool { return true }
func (h *logLines) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h *logLines) WithGroup(string) slog.Handler          { return h }
func (h *logLines) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.msgs = append(h.msgs, r.Message)
	h.mu.Unlock()
	return nil
}

func (h *logLines) has(prefix string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.ContainsFunc(h.msgs, func(m string) bool { return strings.HasPrefix(m, prefix) })
}

// readySpare returns the pid of s's ready spare and a pidfd on it (closed
// at the end of the test), failing when there is none.
func readySpare(t *testing.T, s *sandbox.Sandbox) (int, int) {
	t.Helper()
	pid := s.SpareSettled()
	if pid == 0 {
		t.Fatal("no spare ready")
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return pid, fd
}

// gone reports whether the process behind pidfd has ended (reaped or a
// zombie); a pidfd is immune to pid reuse.
func gone(pidfd int) bool {
	err := unix.PidfdSendSignal(pidfd, 0, nil, 0)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	n, _ := unix.Poll(fds, 0)
	return n == 1
}

// waitGone blocks until the process behind pidfd ends; the minute is a
// hang guard, not a verdict on speed.
func waitGone(t *testing.T, pidfd int, what string) {
	t.Helper()
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 60_000)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n != 1 {
			t.Fatalf("%s: still running after a minute (%v)", what, err)
		}
		return
	}
}

// TestSpareFreshPerRun: each run takes the spare that was ready, and that
// spare is never seen again; the next run gets a new one. Each run's
// program is PID 1 of its own PID namespace, so no run shares one.
func TestSpareFreshPerRun(t *testing.T) {
	s, _ := spareSandbox(t)
	seen := map[int]bool{}
	for i := range 3 {
		pid, fd := readySpare(t, s)
		if seen[pid] {
			t.Fatalf("run %d: spare %d served an earlier run", i, pid)
		}
		seen[pid] = true
		res, err := s.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/sh", "-c", "echo $$"}})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("run %d: %v %+v", i, err, res)
		}
		if got := strings.TrimSpace(string(res.Stdout)); got != "1" {
			t.Fatalf("run %d: the program is pid %s of its namespace, want 1", i, got)
		}
		if !gone(fd) {
			t.Fatalf("run %d: spare %d still runs after the run it served", i, pid)
		}
	}
}

// TestHostileNothingLeftForTheNextRun: what one run leaves — files in /tmp
// and /out, a daemon in its own session, a pool mount — is not there for
// the next run, which takes the next spare.
func TestHostileNothingLeftForTheNextRun(t *testing.T) {
	s, _ := spareSandbox(t)
	d := newRunDirs(t)
	s.SpareSettled()
	first, err := s.Run(context.Background(), sandbox.Spec{
		Argv: []string{"/bin/sh", "-c", `echo left > /tmp/left; echo left > /out/left
setsid sleep 600 </dev/null >/dev/null 2>&1 &
echo $!`},
		Pools: d.pools(),
		Temp:  true,
	})
	if err != nil || first.ExitCode != 0 {
		t.Fatalf("first run: %v %+v", err, first)
	}
	daemon := strings.TrimSpace(string(first.Stdout))
	if _, err := strconv.Atoi(daemon); err != nil {
		t.Fatalf("first run printed %q, want the daemon's pid", first.Stdout)
	}
	s.SpareSettled()
	second, err := s.Run(context.Background(), sandbox.Spec{
		Argv: []string{"/bin/sh", "-c", fmt.Sprintf(`ls -A /tmp /out /pools; if kill -0 %s 2>/dev/null; then echo daemon-alive; fi; echo pid=$$`, daemon)},
		Temp: true,
	})
	if err != nil || second.ExitCode != 0 {
		t.Fatalf("second run: %v %+v", err, second)
	}
	out := string(second.Stdout)
	for _, leak := range []string{"left", "daemon-alive", "p\n"} {
		if strings.Contains(out, leak) {
			t.Errorf("the second run sees %q of the first:\n%s", leak, out)
		}
	}
	if !strings.Contains(out, "pid=1\n") {
		t.Errorf("the second run's program is not PID 1 of a new namespace:\n%s", out)
	}
}

// TestSpareBrokenCostsAFreshStart: a spare that died before its run (here
// killed from outside) costs the run a fresh start, not a failure; the
// run is not run twice.
func TestSpareBrokenCostsAFreshStart(t *testing.T) {
	s, lines := spareSandbox(t)
	pid, fd := readySpare(t, s)
	if err := unix.Kill(pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, fd, "the killed spare")
	res, err := s.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/sh", "-c", "echo once >> /out/runs; cat /out/runs"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("a dead spare failed the run: %v %+v", err, res)
	}
	if got := string(res.Stdout); got != "once\n" {
		t.Errorf("stdout %q, want the program run once in a fresh sandbox", got)
	}
	if !lines.has("sandbox: spare trampoline unusable") {
		t.Errorf("the run did not go through the dead spare first: %q", lines.msgs)
	}
}

// TestSpareStoppedByCloseAndStop: StopSpare (the kill switch's path) and
// Close (shutdown) end the ready spare before they return; runs still work
// after either, and after Close no new spare is started.
func TestSpareStoppedByCloseAndStop(t *testing.T) {
	s, _ := spareSandbox(t)
	_, fd := readySpare(t, s)
	s.StopSpare()
	if !gone(fd) {
		t.Fatal("the spare outlived StopSpare")
	}
	run := func() {
		t.Helper()
		if res, err := s.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/true"}}); err != nil || res.ExitCode != 0 {
			t.Fatalf("run: %v %+v", err, res)
		}
	}
	run() // starts afresh, and a new spare
	_, fd = readySpare(t, s)
	s.Close()
	if !gone(fd) {
		t.Fatal("the spare outlived Close")
	}
	run()
	if pid := s.SpareSettled(); pid != 0 {
		t.Fatalf("spare %d started after Close", pid)
	}
}

// TestSpareAbandonedRunsNothing: a spare whose spec socket closes before a
// run was handed over exits with the trampoline's refusal, having run
// nothing.
func TestSpareAbandonedRunsNothing(t *testing.T) {
	s, _ := spareSandbox(t)
	code, status := s.AbandonSpare()
	if code != 125 || !strings.Contains(status, `"stage":"spec"`) || !strings.Contains(status, "closed before a run") {
		t.Fatalf("abandoned spare: exit %d, status %q; want 125 and the spec stage's refusal", code, status)
	}
}

// spareHelperEnv makes the test binary a stand-in server (testMain): it
// builds a Sandbox with a spare, prints the spare's pid and waits.
const spareHelperEnv = "AIRLOCK_SPARE_HELPER_TRAMPOLINE"

func spareHelper(trampoline string) int {
	s, err := sandbox.New(&sandbox.Options{TrampolinePath: trampoline, Spare: true})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println(s.SpareSettled())
	bufio.NewReader(os.Stdin).ReadString('\n') // until killed
	return 0
}

// TestSpareDiesWithServer: a server killed with SIGKILL (no shutdown
// runs) takes its spare with it. Two mechanisms each suffice: Pdeathsig,
// and the spec socket's end the dead server held closing (the spare's
// wait ends with ErrNoRun); it passes with Pdeathsig removed.
func TestSpareDiesWithServer(t *testing.T) {
	newSandbox(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), spareHelperEnv+"="+trampolinePath)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper printed %q", line)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	cmd.Process.Kill()
	cmd.Wait()
	waitGone(t, fd, "the dead server's spare")
}

// TestSpareNicedUntilItsRun: a spare waits at a lower CPU priority than
// the server (its start competes with the end of the run before it, issue
// 27), and the pipeline it is handed runs at the server's own priority —
// fails with the priority not given back (the pipeline niced) or not
// lowered (the spare at the server's).
func TestSpareNicedUntilItsRun(t *testing.T) {
	s := newSandbox(t)
	prio, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	base := 20 - prio
	pid := s.SpareSettled()
	if pid == 0 {
		t.Fatal("no spare ready")
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// Fields after the command's closing parenthesis: state is the 3rd
	// field of the line, nice the 19th.
	rest := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if got, want := rest[19-3], strconv.Itoa(min(base+10, 19)); got != want {
		t.Errorf("spare %d at nice %s, want %s (the server's %d, lowered)", pid, got, want, base)
	}
	res, err := s.Run(context.Background(), sandbox.Spec{Argv: []string{hostilePath, "nice"}, ReadOnly: []string{fixtureDir}})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("nice=%d err=<nil>", base); !strings.Contains(string(res.Stdout), want) {
		t.Errorf("pipeline reports %q, want %q (the server's priority)", res.Stdout, want)
	}
}

// TestStoppedStartIsNoWarning: a shutdown (or the kill switch) that ends a
// spare while it starts is what they are for — `airlock serve` closed at
// once used to log "starting a spare trampoline" as a warning. (New
// returns with the first spare's start in flight, so Close meets it
// there; were it already ready, nothing would be logged either way.)
func TestStoppedStartIsNoWarning(t *testing.T) {
	s, lines := spareSandbox(t)
	s.Close()
	if lines.has("sandbox: starting a spare trampoline") {
		t.Error("a spare stopped while it started was logged as a failed start")
	}
}
