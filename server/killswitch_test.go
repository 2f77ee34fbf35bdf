package server

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/policy/killswitch"
	"github.com/airlock-dev/airlock/internal/testkit/gobuild"
)

// TestKillFromAnotherProcessWithin50ms: `airlock kill` run as its own
// process engages the switch of a running server, which reads it from
// memory (issue 11), and the server refuses every call that starts more
// than 50 ms after the switch file appeared. Measured, not slept: a
// goroutine records when the file appears, and calls are made back to
// back until one is refused.
func TestKillFromAnotherProcessWithin50ms(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "airlock")
	gobuild.Build(t, bin, "..")
	f := newFixture(t, "local")
	c := f.connect(t)
	read := map[string]any{"pool": "alpha", "path": "hello.txt"}
	if res := call(t, c, "read_pool_file", read); res.IsError {
		t.Fatalf("before: %s", text(res))
	}
	var appeared atomic.Int64 // UnixNano when the file was first seen
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := os.Stat(filepath.Join(f.state, killswitch.FileName)); err == nil {
				appeared.Store(time.Now().UnixNano())
				return
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	kill := exec.Command(bin, "kill", "--state", f.state, "--reason", "drill")
	done := make(chan error, 1)
	go func() {
		out, err := kill.CombinedOutput()
		if err != nil {
			t.Logf("airlock kill: %s", out)
		}
		done <- err
	}()
	// The bound is on propagation, not on a call's own duration: every
	// call that starts more than 50 ms after the file appeared must be
	// refused (a call already in flight at the trip, or one whose audit
	// fsync is slow on a loaded disk, does not count against it).
	for deadline := time.Now().Add(10 * time.Second); ; {
		start := time.Now()
		res := call(t, c, "read_pool_file", read)
		at := appeared.Load()
		if code(res) == "KILL_SWITCH_ENGAGED" {
			if at == 0 {
				t.Fatal("refused before the switch file appeared")
			}
			t.Logf("first refused call started %v after the switch file appeared", max(0, start.Sub(time.Unix(0, at))))
			break
		}
		if res.IsError {
			t.Fatalf("unexpected refusal: %s", text(res))
		}
		if at != 0 {
			if lag := start.Sub(time.Unix(0, at)); lag > 50*time.Millisecond {
				t.Fatalf("a call started %v after the switch file appeared was served, want refused within 50ms", lag)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("calls still served 10s after airlock kill started")
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("airlock kill: %v", err)
	}
}
