package server

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// The pipeline sandbox keeps a spare trampoline (issue 27; package sandbox,
// spare.go): a process started before its run. It must not outlive what
// stops pipelines: the kill switch (no later than the next call's refusal)
// and the runner's shutdown (before Close returns).

// spareLog is a slog.Handler that passes on the pid of every spare the
// sandbox reports ready.
type spareLog chan int

func (spareLog) Enabled(context.Context, slog.Level) bool { return true }
func (h spareLog) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h spareLog) WithGroup(string) slog.Handler          { return h }
func (h spareLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "sandbox: spare ready" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "pid" {
			select {
			case h <- int(a.Value.Int64()):
			default:
			}
		}
		return true
	})
	return nil
}

// spareOf serves f with a runner of its own whose sandbox reports its
// spares, and returns that fixture and a pidfd on its first spare.
func spareOf(t *testing.T, f *fixture) (*fixture, int) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the sandbox needs root")
	}
	ready := make(spareLog, 16)
	g := f.withRunner(t, runner.Options{Logger: slog.New(ready)}, nil)
	var pid int
	select {
	case pid = <-ready: // New starts the first spare
	case <-time.After(time.Minute): // a hang guard, not a verdict on speed
		t.Fatal("the pipeline sandbox started no spare")
	}
	fd, err := unix.PidfdOpen(pid, 0)
	must(t, err)
	t.Cleanup(func() { unix.Close(fd) })
	return g, fd
}

// ended reports whether the process behind pidfd has ended.
func ended(pidfd int) bool {
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); errors.Is(err, unix.ESRCH) {
		return true
	}
	n, _ := unix.Poll([]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}, 0)
	return n == 1
}

// TestKillSwitchStopsSpare: once the kill switch is tripped, the next
// call's refusal returns only after the spare is gone.
func TestKillSwitchStopsSpare(t *testing.T) {
	g, fd := spareOf(t, newFixture(t, "runner"))
	c := g.connect(t)
	_, err := operator.TripKillSwitch(g.state, "tester", "incident")
	must(t, err)
	if res := call(t, c, "list_pools", nil); code(res) != "KILL_SWITCH_ENGAGED" {
		t.Fatalf("after the kill switch: %s", text(res))
	}
	if !ended(fd) {
		t.Fatal("the spare trampoline outlived the kill switch")
	}
}

// TestShutdownStopsSpare: the runner's Close ends the spare.
func TestShutdownStopsSpare(t *testing.T) {
	g, fd := spareOf(t, newFixture(t, "runner"))
	must(t, g.r.Close())
	if !ended(fd) {
		t.Fatal("the spare trampoline outlived the runner's Close")
	}
}
