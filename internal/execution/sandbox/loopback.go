//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// The run's one way out (Spec.Loopback). The run's network namespace is
// empty: its loopback interface is down and there is no other interface,
// so nothing inside can route anywhere (namespaces.go). For a run that is
// given a Loopback, the parent — before it sends the spec, so before the
// pipeline exists — enters that namespace on one locked OS thread, brings
// `lo` up, opens a TCP listener on 127.0.0.1:port there and returns to its
// own namespace. The listening socket keeps the namespace it was created
// in: the pipeline can connect to it, the host cannot, and the process
// that accepts (the caller's proxy) runs outside the sandbox with the
// host's network. No forwarder runs in the sandbox, no file descriptor is
// passed in, and no AF_UNIX socket is needed (seccomp denies them).
//
// What the pipeline still cannot do: connect to any other port (Landlock
// grants connect on this one port only, and no bind at all; ABI 4 and
// later), reach any address outside 127.0.0.0/8 (no route), resolve names
// (no resolver, no route to one), or use UDP/raw sockets beyond its own
// loopback (nothing listens there). Tests: TestLoopbackServesOnlyItsPort,
// TestHostileTCP (no Loopback: still no network).

// openLoopback opens the listener of loop inside the network namespace of
// pid and starts loop.Serve on it. It refuses if pid shares this
// process's network namespace (the listener would be on the host).
func openLoopback(pid int, loop *Loopback) (net.Listener, error) {
	target, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return nil, err
	}
	defer target.Close()
	var tst, own unix.Stat_t
	if err := unix.Fstat(int(target.Fd()), &tst); err != nil {
		return nil, err
	}
	if err := unix.Stat("/proc/self/ns/net", &own); err != nil {
		return nil, err
	}
	if tst.Ino == own.Ino && tst.Dev == own.Dev {
		return nil, errors.New("the run shares the host's network namespace")
	}
	type result struct {
		l   net.Listener
		err error
	}
	ch := make(chan result, 1)
	// setns(CLONE_NEWNET) changes only the calling thread: the work runs
	// on a goroutine locked to its thread, which goes back to its own
	// namespace before unlocking. If it cannot go back, the goroutine
	// ends still locked and the Go runtime destroys the thread rather
	// than let other goroutines run in the sandbox's namespace.
	go func() {
		runtime.LockOSThread()
		home, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer home.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("entering the run's network namespace: %w", err)}
			return
		}
		l, err := loopbackListen(loop.Port)
		if rerr := unix.Setns(int(home.Fd()), unix.CLONE_NEWNET); rerr != nil {
			if l != nil {
				l.Close()
			}
			ch <- result{err: fmt.Errorf("returning to the host's network namespace: %w", rerr)}
			return // still locked: the thread dies with the goroutine
		}
		runtime.UnlockOSThread()
		ch <- result{l: l, err: err}
	}()
	r := <-ch
	if r.err != nil {
		return nil, r.err
	}
	go loop.Serve(r.l)
	return r.l, nil
}

// loopbackListen brings up lo in the current thread's network namespace
// (the kernel then assigns 127.0.0.1/8 and ::1) and listens on
// 127.0.0.1:port.
func loopbackListen(port uint16) (net.Listener, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return nil, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return nil, fmt.Errorf("reading lo's flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return nil, fmt.Errorf("bringing lo up: %w", err)
	}
	l, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, fmt.Errorf("listening in the run: %w", err)
	}
	return l, nil
}
