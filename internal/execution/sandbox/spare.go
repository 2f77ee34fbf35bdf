//go:build linux

package sandbox

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/execution/sandbox/confine"
	"golang.org/x/sys/unix"
)

// A spare is a trampoline started before its run exists (Options.Spare),
// so that a run does not wait for the clone into fresh namespaces, the
// execve of the server binary and its Go initialisation (issue 27: most
// of a pipeline's overhead). It is started exactly as a run's trampoline
// is (spawn: the same namespaces, Pdeathsig), and then waits, blocked in
// confine's receiveRun, holding nothing of any run: its stdin, stdout and
// stderr are /dev/null, it has no tmpfs, no pool, no cgroup of a run, no
// spec — credentials live only in the spec, which it has not got.
//
// Invariant: a spare serves exactly one run and is never reused, so every
// run still gets namespaces, a tmpfs and a cgroup nothing else ever ran in
// (TestSpareFreshPerRun, TestHostileNothingLeftForTheNextRun). A run takes
// the spare (takeSpare), verifies its namespaces, moves it into the run's
// cgroup with the run's limits — both before anything of the run reaches
// it — and hands over the descriptors and spec (handshake); once the
// run's program has ended a new spare is started in the background for
// the next run.
//
// Lifetime: a spare dies with the server (Pdeathsig SIGKILL, and the
// server's end of the spec socket closing; TestSpareDiesWithServer; the
// kernel ties it to the thread that started
// the spare, and Go ends a thread only when a goroutine exits locked to
// it — loopback.go's failure path — which then costs a fresh start); a
// closed spec socket makes it exit having run nothing
// (TestSpareAbandonedRunsNothing); StopSpare (the kill switch) and Close
// (shutdown) kill it and wait for it (TestSpareStoppedByCloseAndStop). A
// spare that died or broke before its run was handed over costs the run a
// fresh start, not a failure (TestSpareBrokenCostsAFreshStart).

// spares is a Sandbox's one-slot spare: at most one ready, at most one
// being started.
type spares struct {
	mu      sync.Mutex
	on      bool   // Options.Spare, New succeeded, not closed
	gen     uint64 // bumped by stop: a spare started before is discarded
	ready   *launch
	filling chan struct{} // closed when the start in flight has ended
	// starting is the spare of the start in flight once its process
	// exists, until it says it is ready: stop kills it.
	starting *launch
}

// launch is one started trampoline, the parent's ends of its channels and,
// once attach ran, what the run hands over.
type launch struct {
	cmd       *exec.Cmd
	sock      *os.File // the spec socket's parent end (confine/handoff.go)
	statusR   *os.File
	kl        *killer
	fromSpare bool // taken from the slot: started before its run
	// niced: started under spareNice; baseNice is the server's own
	// niceness, which handOver gives the run back.
	niced    bool
	baseNice int
	// spoke: the trampoline reported on the run it was handed (a status
	// line of a stage after the handoff), so the run reached it.
	spoke bool

	stdout, stderr *cappedBuffer
	send           [confine.HandoffFiles]*os.File // scratch, stdin, stdout, stderr
	owned          []*os.File                     // ours among send: closed after the handoff
	readers        []*os.File                     // the output pipes' read ends
	copiers        sync.WaitGroup
}

// spawn starts a trampoline in fresh namespaces (argv only, no shell). It
// blocks in the trampoline until handshake hands it a run.
func (s *Sandbox) spawn() (*launch, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	sock, child := os.NewFile(uintptr(fds[0]), "spec"), os.NewFile(uintptr(fds[1]), "spec-child")
	statusR, statusW, err := os.Pipe()
	if err != nil {
		sock.Close()
		child.Close()
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	// Holds fd 5 (confine.ScratchFD) until the run's tmpfs replaces it, so
	// nothing the trampoline's runtime opens can land there.
	null, err := os.Open(os.DevNull)
	if err != nil {
		sock.Close()
		child.Close()
		statusR.Close()
		statusW.Close()
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	cmd := &exec.Cmd{
		Path: s.trampoline,
		Args: []string{"airlock-sandbox", confine.TrampolineArg},
		// The trampoline's own environment; the pipeline gets ws.Env.
		// GOMAXPROCS=1 keeps its thread count (charged to pids) small.
		// Stdin, Stdout, Stderr nil: /dev/null until the run's arrive.
		Env:         []string{"GOMAXPROCS=1"},
		Dir:         "/",
		ExtraFiles:  []*os.File{child, statusW, null}, // fds 3, 4, 5
		SysProcAttr: sysProcAttr(),
	}
	err = cmd.Start()
	child.Close()
	statusW.Close()
	null.Close()
	if err != nil {
		sock.Close()
		statusR.Close()
		return nil, &SetupError{Stage: "start", Msg: err.Error(), Errno: errnoOf(err)}
	}
	l := &launch{cmd: cmd, sock: sock, statusR: statusR, kl: &killer{}}
	l.kl.setProcess(cmd.Process)
	return l, nil
}

// awaitReady waits for the trampoline's ReadyByte (confine/handoff.go):
// it is then past its start and waits for its run. A trampoline that dies
// first (or is killed by stop) ends the wait with an error.
func (l *launch) awaitReady() error {
	var b [1]byte
	n, err := l.sock.Read(b[:])
	if n == 1 && b[0] == confine.ReadyByte {
		return nil
	}
	if err == nil {
		err = fmt.Errorf("unexpected byte %q", b[0])
	}
	return &SetupError{Stage: "start", Msg: "spare trampoline ended before it was ready: " + err.Error()}
}

// discard ends a trampoline that was never handed a run: its spec socket
// closes (it would exit by itself, having run nothing), it is killed to
// be sure, and reaped.
func (l *launch) discard() {
	l.sock.Close()
	l.kl.kill("discarded")
	l.cmd.Wait()
	l.statusR.Close()
}

// attach prepares what the run hands the trampoline with its spec: the
// quota tmpfs and stdio — the caller's pipes, or ones of ours whose output
// is captured (capped) and whose input is fed from stdin.data.
func (l *launch) attach(lim Limits, stdin stdio, scratch *os.File) error {
	flood := func() { l.kl.kill(KillOutput) }
	l.stdout = &cappedBuffer{limit: lim.OutputBytes, ceiling: floodFactor * lim.OutputBytes, onFlood: flood}
	l.stderr = &cappedBuffer{limit: lim.OutputBytes, ceiling: floodFactor * lim.OutputBytes, onFlood: flood}
	l.send[0] = scratch
	switch {
	case stdin.in != nil:
		l.send[1] = stdin.in
	case stdin.data != nil:
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		l.send[1], l.owned = r, append(l.owned, r)
		l.copiers.Add(1)
		go func() {
			defer l.copiers.Done()
			w.Write(stdin.data) // EPIPE when the pipeline stops reading
			w.Close()
		}()
	default:
		null, err := os.Open(os.DevNull)
		if err != nil {
			return err
		}
		l.send[1], l.owned = null, append(l.owned, null)
	}
	for i, o := range []struct {
		file *os.File
		buf  *cappedBuffer
	}{{stdin.out, l.stdout}, {stdin.errf, l.stderr}} {
		if o.file != nil {
			l.send[2+i] = o.file
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		l.send[2+i], l.owned, l.readers = w, append(l.owned, w), append(l.readers, r)
		l.copiers.Add(1)
		go func() {
			defer l.copiers.Done()
			io.Copy(o.buf, r)
		}()
	}
	return nil
}

// release closes our copies of what was (or would have been) handed over:
// from here the trampoline's are the only ends left, so the output copiers
// see EOF when the run's processes are gone.
func (l *launch) release() {
	for _, f := range l.owned {
		f.Close()
	}
	l.owned = nil
}

// waitCopiers joins the output copiers after the trampoline was reaped.
// The run's PID namespace is gone by then, so every writer is closed; if
// one is still held (which the namespace should make impossible), the
// read ends are closed after a grace period rather than hang the run.
func (l *launch) waitCopiers() (heldOpen bool) {
	done := make(chan struct{})
	go func() {
		l.copiers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		heldOpen = true
		for _, r := range l.readers {
			r.Close()
		}
		<-done
	}
	for _, r := range l.readers {
		r.Close()
	}
	return heldOpen
}

// handOver sends the run's descriptors and its spec, then shuts down its
// side of the spec socket (EOF ends the spec). The socket itself is closed
// by handshake once the trampoline is done with it: a close with unread
// data (a cold trampoline's ReadyByte) would reset the connection under
// the trampoline's read of the spec.
func (l *launch) handOver(ws *confine.Spec) error {
	defer unix.Shutdown(int(l.sock.Fd()), unix.SHUT_WR)
	if l.niced {
		// The thread that will exec the pipeline is the trampoline's main
		// one (its pid): it alone gets the server's priority back, and the
		// pipeline inherits it. (Not possible only for a process already
		// gone, whose handoff fails below.)
		_ = unix.Setpriority(unix.PRIO_PROCESS, l.cmd.Process.Pid, l.baseNice)
	}
	data, err := json.Marshal(ws)
	if err != nil {
		return &SetupError{Stage: "spec", Msg: err.Error()}
	}
	var fds [confine.HandoffFiles]int
	for i, f := range l.send {
		fds[i] = int(f.Fd())
	}
	err = confine.SendRun(int(l.sock.Fd()), fds)
	runtime.KeepAlive(l.send)
	if err == nil {
		_, err = l.sock.Write(data)
	}
	return err
}

// takeSpare returns the ready spare, or the one being started once it is
// (it started earlier than a start now would), or nil. The next one is
// started once this run's program has ended (executeOnce), not now: a
// start competes for CPU with the run's confinement and program, which
// made them take twice as long on a loaded machine (BENCHMARKS.md).
func (s *Sandbox) takeSpare() *launch {
	sp := &s.spares
	sp.mu.Lock()
	if ch := sp.filling; sp.ready == nil && ch != nil {
		sp.mu.Unlock()
		<-ch
		sp.mu.Lock()
	}
	l := sp.ready
	sp.ready = nil
	sp.mu.Unlock()
	if l != nil {
		l.fromSpare = true
	}
	return l
}

// refill starts a spare in the background unless one is ready or being
// started, or spares are off.
func (s *Sandbox) refill() {
	sp := &s.spares
	sp.mu.Lock()
	if !sp.on || sp.ready != nil || sp.filling != nil {
		sp.mu.Unlock()
		return
	}
	ch := make(chan struct{})
	sp.filling = ch
	gen := sp.gen
	sp.mu.Unlock()
	go func() {
		defer close(ch)
		l, err := s.spawnNiced()
		if err == nil {
			sp.mu.Lock()
			sp.starting = l
			stopped := sp.gen != gen
			sp.mu.Unlock()
			if stopped {
				l.kl.kill("discarded")
			}
			err = l.awaitReady()
		}
		sp.mu.Lock()
		sp.starting = nil
		stopped := !sp.on || sp.gen != gen
		keep := err == nil && !stopped && sp.ready == nil
		if keep {
			sp.ready = l
		}
		sp.filling = nil
		sp.mu.Unlock()
		switch {
		case err != nil && stopped:
			// Ended by the kill switch or shutdown while it started: what
			// they are for, not a failure to warn an operator about.
			s.log.Debug("sandbox: a spare being started was stopped", "err", err)
		case err != nil:
			s.log.Warn("sandbox: starting a spare trampoline", "err", err)
		case keep:
			s.log.Debug("sandbox: spare ready", "pid", l.cmd.Process.Pid)
		}
		if !keep && l != nil {
			l.discard() // before ch closes: stop waits for it
		}
	}()
}

// StopSpare kills the ready spare, if any, and one being started, and
// waits for both: nothing of the sandbox runs afterwards but runs in
// progress. The kill switch calls it; the next Run starts fresh and
// starts a new spare. Safe on a nil Sandbox.
func (s *Sandbox) StopSpare() {
	if s != nil {
		s.stopSpares(false)
	}
}

// Close stops the spare for good (shutdown): runs still work, cold.
// Safe on a nil Sandbox.
func (s *Sandbox) Close() error {
	if s != nil {
		s.stopSpares(true)
	}
	return nil
}

func (s *Sandbox) stopSpares(closing bool) {
	sp := &s.spares
	sp.mu.Lock()
	if closing {
		sp.on = false
	}
	sp.gen++
	l, ch := sp.ready, sp.filling
	sp.ready = nil
	if sp.starting != nil {
		sp.starting.kl.kill("discarded") // its start ends; the refill discards it
	}
	sp.mu.Unlock()
	if l != nil {
		l.discard()
	}
	if ch != nil {
		<-ch
	}
}

// unusedSpare reports whether a failed handshake may be retried with a
// fresh start: the launch was a spare, it never reported a status (so it
// never had the run's spec applied, let alone the pipeline exec'd), and
// neither the wall clock nor the caller ended the run.
func (l *launch) unusedSpare() bool {
	r := l.kl.why()
	return l.fromSpare && !l.spoke && (r == "" || r == "setup")
}

// spareNice is how much lower a spare's CPU priority is than the server's
// until its run is handed over (issue 27). A spare is started as the run
// before it ends, and its start (~10 ms of CPU) competed with the rest of
// that run — collection, its record's commit, the answer — which took
// ~2–3 ms longer for it (BENCHMARKS.md); niced, the start takes the CPU
// they leave. The pipeline itself runs at the server's priority (handOver).
const spareNice = 10

// spawnNiced is spawn from an OS thread niced by spareNice: a child
// inherits the niceness of the thread that forks it, every thread of it
// from its first instruction on. If the niceness cannot be set, the spare
// starts at the server's (only slower); if this thread's cannot be given
// back, the thread stays locked and Go ends it with the goroutine — and
// the spare, whose Pdeathsig follows that thread, with it: its run then
// costs a fresh start (unusedSpare), never a niced server thread.
func (s *Sandbox) spawnNiced() (*launch, error) {
	runtime.LockOSThread()
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, 0)
	base := 20 - prio // the raw system call's value is 20 - nice
	if err == nil {
		err = unix.Setpriority(unix.PRIO_PROCESS, 0, min(base+spareNice, 19))
	}
	if err != nil {
		runtime.UnlockOSThread()
		return s.spawn()
	}
	l, err := s.spawn()
	if l != nil {
		l.niced, l.baseNice = true, base
	}
	if unix.Setpriority(unix.PRIO_PROCESS, 0, base) == nil {
		runtime.UnlockOSThread()
	}
	return l, err
}
