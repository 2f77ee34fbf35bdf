package server

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/killswitch"
)

// TestKillFromAnotherProcessWithin50ms: `airlock kill` run as its own
// process engages the switch of a running server, which reads it from
// memory (issue 11), and the server refuses calls within 50 ms of the
// switch file appearing. Measured, not slept: a watcher records when the
// file appears, and calls are made back to back until one is refused.
func TestKillFromAnotherProcessWithin50ms(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "airlock")
	build := exec.Command("go", "build", "-o", bin, "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building airlock: %v\n%s", err, out)
	}
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
	for deadline := time.Now().Add(10 * time.Second); ; {
		res := call(t, c, "read_pool_file", read)
		if code(res) == "KILL_SWITCH_ENGAGED" {
			refused := time.Now()
			at := appeared.Load()
			if at == 0 {
				t.Fatal("refused before the switch file appeared")
			}
			lag := refused.Sub(time.Unix(0, at))
			t.Logf("refused %v after the switch file appeared", lag)
			if lag > 50*time.Millisecond {
				t.Errorf("refused %v after the switch file appeared, want within 50ms", lag)
			}
			break
		}
		if res.IsError {
			t.Fatalf("unexpected refusal: %s", text(res))
		}
		if time.Now().After(deadline) {
			t.Fatal("calls still served 10s after airlock kill started")
		}
	}
	if err := <-done; err != nil {
		t.Fatalf("airlock kill: %v", err)
	}
}
