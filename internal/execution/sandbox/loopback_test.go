//go:build linux

package sandbox_test

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

// countingServe accepts on the run's loopback listener, counting.
func countingServe(n *atomic.Int32) func(net.Listener) {
	return func(l net.Listener) {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}
}

// TestLoopbackServesOnlyItsPort: with Spec.Loopback the pipeline reaches
// the listener the parent opened in the run's network namespace — on the
// same port number as a listener on the host's loopback, which stays
// untouched (the namespace, not a port check, keeps them apart) — and no
// other port, still resolves no name, and cannot listen (Landlock grants
// no bind).
func TestLoopbackServesOnlyItsPort(t *testing.T) {
	d := newRunDirs(t)
	host := hostListener(t)
	var inRun atomic.Int32
	port := host.Addr().(*net.TCPAddr).Port
	loop := &sandbox.Loopback{Port: uint16(port), Serve: countingServe(&inRun)}
	addr := "127.0.0.1:" + strconv.Itoa(port)

	spec := hostileSpec(d, "tcp", addr)
	spec.Loopback = loop
	res := runHostile(t, spec)
	if !strings.HasPrefix(string(res.Stdout), "ESCAPED tcp") {
		t.Fatalf("the run could not reach its loopback listener: %q %q", res.Stdout, res.Stderr)
	}
	if !strings.Contains(strings.Join(res.Mechanisms, " "), "loopback:"+addr) {
		t.Fatalf("mechanisms: %v", res.Mechanisms)
	}

	cases := []struct{ name, mode, arg string }{
		{"another loopback port", "tcp", "127.0.0.1:" + strconv.Itoa(port^1)},
		{"the host listener's port on ::1", "tcp", "[::1]:" + strconv.Itoa(port)},
		{"an outside address", "tcp", "192.0.2.1:" + strconv.Itoa(port)},
		{"a name", "dns", "example.com"},
		{"a listener of its own", "listen", "127.0.0.1:" + strconv.Itoa(port^2)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := hostileSpec(newRunDirs(t), c.mode, c.arg)
			spec.Loopback = loop
			res := runHostile(t, spec)
			if res.ExitCode != 0 || !strings.HasPrefix(string(res.Stdout), "BLOCKED ") {
				t.Fatalf("not blocked: %q", res.Stdout)
			}
		})
	}
	// The host listener is never reached (checked in its backlog, no
	// sleep); the run's listener got at most the one connection (that it
	// got it is "ESCAPED tcp" above: its accept may lose to the run's end).
	noConnectionQueued(t, host)
	if n := inRun.Load(); n > 1 {
		t.Fatalf("the run's listener accepted %d connections, want at most the first run's", n)
	}
}

// TestLoopbackRefusesBadSpec: a Loopback without a port or a Serve is an
// invalid spec, refused before anything starts.
func TestLoopbackRefusesBadSpec(t *testing.T) {
	s := newSandbox(t)
	for _, l := range []*sandbox.Loopback{{Port: 0, Serve: func(net.Listener) {}}, {Port: 8080}} {
		_, err := s.Run(context.Background(), sandbox.Spec{Argv: []string{"/bin/true"}, Loopback: l})
		if err == nil || !strings.Contains(err.Error(), "Loopback") {
			t.Fatalf("%+v: %v", l, err)
		}
	}
}
