package server

import (
	"os/exec"
	"testing"
)

// TestKillFromAnotherProcessNextCallRefused (issue 26 item 7): `airlock
// kill` run as its own process engages the switch of a running server:
// once the command has returned, the server's next call is refused, and
// after `airlock kill --release` has returned the next call is served.
// Every call reads the switch itself, so nothing is measured or awaited:
// under any load the verdict is the next call's (a watcher's 10 ms poll,
// starved of CPU, once served a call 72 ms after the trip).
func TestKillFromAnotherProcessNextCallRefused(t *testing.T) {
	bin := airlockBinary(t)
	f := newFixture(t, "local")
	c := f.connect(t)
	read := map[string]any{"pool": "alpha", "path": "hello.txt"}
	airlock := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(bin, append(args, "--state", f.state)...).CombinedOutput(); err != nil {
			t.Fatalf("airlock %v: %v\n%s", args, err, out)
		}
	}
	for _, step := range []struct {
		args []string
		code string
	}{
		{nil, ""},
		{[]string{"kill", "--reason", "drill"}, "KILL_SWITCH_ENGAGED"},
		{[]string{"kill", "--release", "--reason", "drill over"}, ""},
		{[]string{"kill", "--reason", "again"}, "KILL_SWITCH_ENGAGED"},
	} {
		if step.args != nil {
			airlock(step.args...)
		}
		if res := call(t, c, "read_pool_file", read); code(res) != step.code {
			t.Fatalf("after airlock %v: the next call answered %q (%s), want %q", step.args, code(res), text(res), step.code)
		}
	}
}
