//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-dev/airlock/internal/execution/sandbox/confine"
)

// Sandbox runs pipelines confined. It is safe for concurrent use; each Run
// gets its own namespaces and cgroup.
type Sandbox struct {
	trampoline string
	stage      string // mounts.go: where each trampoline mounts its new root
	uid, gid   int
	cgroups    *cgroupSetup
	log        *slog.Logger
	report     Report
	onRun      func(*Result, error)
	spares     spares // spare.go
}

// New checks every mechanism (Probe), then dry-runs the trampoline, which
// applies all of them for real and exits. It fails closed: if anything
// required is missing or the self-test fails (a trampoline built with cgo
// fails here), the error is an *UnavailableError naming the mechanism and
// carrying the report.
func New(opts *Options) (*Sandbox, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	s := &Sandbox{uid: o.UID, gid: o.GID, log: o.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.uid == 0 {
		s.uid = 65534
	}
	if s.gid == 0 {
		s.gid = 65534
	}
	if s.uid < 0 || s.gid < 0 {
		return nil, fmt.Errorf("%w: uid/gid %d/%d", ErrInvalidSpec, o.UID, o.GID)
	}
	s.trampoline = o.TrampolinePath
	embedded := false
	if s.trampoline == "" {
		var err error
		if s.trampoline, embedded, err = defaultTrampoline(s.log); err != nil {
			return nil, err
		}
	}
	if st, err := os.Stat(s.trampoline); err != nil || !filepath.IsAbs(s.trampoline) || !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: trampoline %q is not an absolute path to a file", ErrInvalidSpec, s.trampoline)
	}
	cgParent := o.CgroupParent
	if cgParent != "" {
		cgParent = "/" + strings.Trim(filepath.Clean("/"+cgParent), "/")
		if strings.Contains(o.CgroupParent, "..") {
			return nil, fmt.Errorf("%w: cgroup parent %q", ErrInvalidSpec, o.CgroupParent)
		}
	}
	rep, cg := probe(cgParent)
	s.report, s.cgroups = rep, cg
	if !rep.Ready() {
		return nil, &UnavailableError{Reason: strings.Join(rep.Missing(), "; "), Report: rep}
	}
	stage, err := ensureStage()
	if err != nil {
		return nil, &UnavailableError{Reason: err.Error(), Report: rep}
	}
	s.stage = stage
	st := s.selfTest()
	if !st.Active && embedded {
		// A kernel that will not execute a memfd (vm.memfd_noexec = 2)
		// still runs the server binary itself.
		s.log.Warn("sandbox: the embedded trampoline failed its self-test; the server binary re-executes itself", "detail", st.Detail)
		failed := st.Detail
		if s.trampoline, embedded, err = defaultTrampolineSelf(); err != nil {
			return nil, err
		}
		st = s.selfTest()
		// Said where doctor shows it, not only in a log it may discard.
		st.Detail += " (the server binary: the embedded trampoline failed: " + failed + ")"
	}
	if embedded {
		st.Detail += " (embedded trampoline)"
	}
	s.report.Mechanisms = append(s.report.Mechanisms, st)
	if !st.Active {
		return nil, &UnavailableError{Reason: "self-test: " + st.Detail, Report: s.Report()}
	}
	s.onRun = o.OnRun // after the self-test: it is not a pipeline run
	s.spares.on = o.Spare
	s.refill()
	return s, nil
}

// selfTest dry-runs the trampoline: every mechanism is applied for real in
// a fresh sandbox, which then exits instead of exec'ing anything. A
// trampoline binary built with cgo, or one whose main does not call
// MaybeRunTrampoline, fails here rather than on the first pipeline
// (TestNewFailsClosed).
func (s *Sandbox) selfTest() Mechanism {
	res, err := s.execute(context.Background(), &confine.Spec{
		Version: confine.WireVersion, Dir: "/", UID: s.uid, GID: s.gid, Stage: s.stage,
		Rules: confine.SystemRules(), DryRun: true,
	}, effectiveLimits(Limits{Wall: 10 * time.Second}), stdio{}, nil)
	st := Mechanism{Name: MechSelfTest, Required: true, Active: err == nil && res.ExitCode == 0}
	switch {
	case err != nil:
		st.Detail = err.Error()
	case res.ExitCode != 0:
		st.Detail = fmt.Sprintf("trampoline exited %d (%s): %.200s", res.ExitCode, res.Signal, res.Stderr)
	default:
		st.Detail = strings.Join(res.Mechanisms, " ")
	}
	return st
}

// Report returns the probe results and the self-test New ran.
func (s *Sandbox) Report() Report {
	return Report{Mechanisms: append([]Mechanism(nil), s.report.Mechanisms...)}
}

// Run executes spec in a fresh sandbox and waits for it to end. A Result is
// returned for every run that started, whatever the pipeline did (limits
// hit, killed, non-zero exit); the error is non-nil only when the sandbox
// could not be set up (ErrInvalidSpec, ErrUnavailable, *SetupError), when
// Spec.Collect failed (the Result is returned too), or when ctx ended the
// run (then the Result is returned too, with KillReason "canceled", and
// the error is ctx.Err()).
func (s *Sandbox) Run(ctx context.Context, spec Spec) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // nothing is started for a context that is already done
	}
	ws, lim, err := s.prepare(spec)
	if err != nil {
		return nil, err
	}
	res, err := s.execute(ctx, ws, lim, stdio{data: spec.Stdin, in: spec.StdinFile, out: spec.StdoutFile, errf: spec.StderrFile, loop: spec.Loopback}, spec.Collect)
	if err == nil && res.KillReason == KillCanceled {
		err = ctx.Err()
	}
	if s.onRun != nil {
		s.onRun(res, err)
	}
	return res, err
}

// prepare validates spec, applies defaults and builds the trampoline's spec.
// Host paths (pool directories, extra read-only paths) are checked here;
// the pipeline itself only ever sees sandbox paths (mounts.go).
func (s *Sandbox) prepare(spec Spec) (*confine.Spec, Limits, error) {
	lim, err := validLimits(spec.Limits)
	if err != nil {
		return nil, lim, err
	}
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return nil, lim, fmt.Errorf("%w: empty argv", ErrInvalidSpec)
	}
	ws := &confine.Spec{
		Version: confine.WireVersion, Argv: spec.Argv, Dir: spec.Dir, UID: s.uid, GID: s.gid,
		Hostname: "airlock", Rules: confine.SystemRules(), Stage: s.stage, Temp: spec.Temp,
		Rlimits: confine.Rlimits{
			CPUSeconds: cpuSeconds(lim.CPU),
			NoFile:     uint64(lim.OpenFiles),
			FSize:      uint64(lim.FileSizeBytes),
			NProc:      uint64(max(4*lim.Procs, 512)),
		},
	}
	hasPath := false
	for _, e := range spec.Env {
		hasPath = hasPath || strings.HasPrefix(e, "PATH=")
	}
	ws.Env = append([]string(nil), spec.Env...)
	if !hasPath {
		ws.Env = append(ws.Env, "PATH="+DefaultPath)
	}
	for _, p := range spec.Pools {
		if st, err := os.Stat(p.Dir); err != nil || !st.IsDir() || !filepath.IsAbs(p.Dir) {
			return nil, lim, fmt.Errorf("%w: pool %q: %q is not an absolute path to a directory", ErrInvalidSpec, p.ID, p.Dir)
		}
		ws.Pools = append(ws.Pools, confine.Pool{ID: p.ID, Dir: filepath.Clean(p.Dir), Files: p.Files})
	}
	if len(ws.Pools) > 0 {
		ws.Rules = append(ws.Rules, confine.Rule{Path: PoolMountDir, Access: confine.AccessReadExec})
	}
	for _, p := range spec.ReadOnly {
		if err := checkSpecPath(p); err != nil {
			return nil, lim, err
		}
		ws.Binds = append(ws.Binds, filepath.Clean(p))
		ws.Rules = append(ws.Rules, confine.Rule{Path: filepath.Clean(p), Access: confine.AccessReadExec})
	}
	ws.Rules = append(ws.Rules, confine.Rule{Path: OutDir, Access: confine.AccessWrite})
	if spec.Temp {
		ws.Rules = append(ws.Rules, confine.Rule{Path: TempDir, Access: confine.AccessWrite})
	}
	if ws.Dir == "" {
		ws.Dir = OutDir
	}
	if l := spec.Loopback; l != nil {
		if l.Port == 0 || l.Serve == nil {
			return nil, lim, fmt.Errorf("%w: Loopback needs a port and Serve", ErrInvalidSpec)
		}
		ws.ConnectPorts = []int{int(l.Port)}
	}
	if err := ws.Validate(); err != nil {
		return nil, lim, fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	return ws, lim, nil
}

// checkSpecPath: an extra read-only path must be absolute and exist on the
// host (a symlink is followed when bound).
func checkSpecPath(p string) error {
	if !filepath.IsAbs(p) || strings.IndexByte(p, 0) >= 0 {
		return fmt.Errorf("%w: path %q is not absolute", ErrInvalidSpec, p)
	}
	if _, err := os.Stat(p); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	return nil
}

// execute runs ws in a fresh sandbox and waits for everything to end.
// stdio is how a run talks to its caller: data fed on stdin, or pipes
// handed over (Spec.StdinFile, Spec.StdoutFile), and the listener it may
// connect to (Spec.Loopback).
type stdio struct {
	data          []byte
	in, out, errf *os.File
	loop          *Loopback
}

func (s *Sandbox) execute(ctx context.Context, ws *confine.Spec, lim Limits, stdin stdio, collect func(*os.Root) error) (*Result, error) {
	res, err, retry := s.executeOnce(ctx, ws, lim, stdin, collect, true)
	if retry {
		// The spare died or broke before the run was handed to it: the
		// run costs a fresh start, not a failure (spare.go).
		s.log.WarnContext(ctx, "sandbox: spare trampoline unusable, starting afresh", "err", err)
		res, err, _ = s.executeOnce(ctx, ws, lim, stdin, collect, false)
	}
	return res, err
}

// executeOnce is one attempt at a run, in a trampoline taken from the
// spare slot when useSpare, else started now. retry reports that a spare
// failed before anything of the run reached it (launch.unusedSpare).
func (s *Sandbox) executeOnce(ctx context.Context, ws *confine.Spec, lim Limits, stdin stdio, collect func(*os.Root) error, useSpare bool) (_ *Result, _ error, retry bool) {
	runID := randomID()
	cg, err := s.cgroups.create("airlock-"+runID, lim.MemoryBytes, lim.Procs)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err), false
	}
	s.log.DebugContext(ctx, "sandbox: run starting", "run", runID, "cgroup", "airlock-"+runID, "dry_run", ws.DryRun)
	defer func() {
		if err := cg.remove(); err != nil {
			s.log.WarnContext(ctx, "sandbox: cgroup cleanup", "run", runID, "err", err)
		}
	}()
	scratch, err := newScratch(lim.DiskBytes, scratchInodes+ws.MountPoints())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err), false
	}
	// Closed after Collect, before the cgroup goes: the tmpfs's pages are
	// charged to the run's cgroup and are freed with the last reference.
	defer scratch.Close()
	start := time.Now()
	var l *launch
	if useSpare {
		l = s.takeSpare()
	}
	if l == nil {
		if l, err = s.spawn(); err != nil {
			return nil, err, false
		}
	}
	if err := l.attach(lim, stdin, scratch); err != nil {
		l.release()
		l.discard()
		l.waitCopiers()
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err), false
	}
	stopWatch := watch(ctx, l.kl, lim.Wall)
	var loopL net.Listener
	before := func(pid int) (string, error) {
		if stdin.loop == nil {
			return "", nil
		}
		var err error
		loopL, err = openLoopback(pid, stdin.loop)
		return fmt.Sprintf("loopback:127.0.0.1:%d", stdin.loop.Port), err
	}
	mech, setupErr := s.handshake(l, cg, ws, before)
	if setupErr != nil {
		l.kl.kill("setup")
	}
	l.cmd.Wait()
	s.refill() // the next run's spare, now that this run's program is over (spare.go)
	if loopL != nil {
		loopL.Close() // Serve returns: the run is over
	}
	if l.waitCopiers() {
		s.log.WarnContext(ctx, "sandbox: output pipes held open after exit", "run", runID)
	}
	dur := time.Since(start)
	stopWatch()
	// If the wall clock or ctx ended the run while it was still being set
	// up, the setup "failure" is only the consequence: report the kill.
	if reason := l.kl.why(); setupErr != nil && reason != KillWallTime && reason != KillCanceled {
		s.log.DebugContext(ctx, "sandbox: setup failed", "run", runID, "err", setupErr)
		return nil, setupErr, l.unusedSpare() && ctx.Err() == nil
	}
	res := buildResult(l.cmd.ProcessState, l.kl.why(), cg.stats(), lim)
	res.Duration = dur
	res.Stdout, res.StdoutTruncated = l.stdout.buf, l.stdout.truncated
	res.Stderr, res.StderrTruncated = l.stderr.buf, l.stderr.truncated
	if res.StdoutTruncated || res.StderrTruncated {
		res.LimitsHit = appendOnce(res.LimitsHit, "output")
	}
	res.Mechanisms = mech
	if used, full, err := scratchUsage(scratch); err == nil {
		res.DiskBytes = used
		if full {
			res.LimitsHit = appendOnce(res.LimitsHit, LimitDisk)
		}
	}
	s.log.DebugContext(ctx, "sandbox: run ended", "run", runID, "exit", res.ExitCode, "signal", res.Signal,
		"kill_reason", res.KillReason, "duration", dur, "disk_bytes", res.DiskBytes)
	if collect != nil {
		if err := collectOut(scratch, collect); err != nil {
			return res, err, false
		}
	}
	return res, nil, false
}

// collectOut hands /out to collect through the parent's own descriptor to
// the run's tmpfs: the pipeline's PID namespace is gone (cmd.Wait returned
// after PID 1 died, and the kernel ends every other process of the
// namespace before that), so nothing writes while collect reads.
func collectOut(scratch *os.File, collect func(*os.Root) error) error {
	root, err := os.OpenRoot(fmt.Sprintf("/proc/self/fd/%d%s", scratch.Fd(), OutDir))
	if err != nil {
		return fmt.Errorf("sandbox: opening the run's %s: %w", OutDir, err)
	}
	defer root.Close()
	if err := collect(root); err != nil {
		return fmt.Errorf("sandbox: collecting %s: %w", OutDir, err)
	}
	return nil
}

// handshake verifies the namespaces, moves the trampoline into the run's
// cgroups, hands over the run's descriptors and spec (spare.go) and reads
// the trampoline's status until its execve (EOF on the close-on-exec
// status pipe). Nothing of the run reaches the trampoline before its
// namespaces are verified and it is in the run's cgroups with their
// limits: a spare started long before is confined exactly like a fresh one.
//
// before, if set, runs once the namespaces and cgroups are verified and
// before the spec is sent, so before the pipeline exists (the loopback
// listener); it names what it set up for the mechanisms list.
func (s *Sandbox) handshake(l *launch, cg *runCgroup, ws *confine.Spec, before func(pid int) (string, error)) ([]string, error) {
	defer l.statusR.Close()
	defer l.release()
	defer l.sock.Close()
	pid := l.cmd.Process.Pid
	mech, err := verifyNamespaces(pid)
	if err != nil {
		return nil, &SetupError{Stage: "namespaces", Msg: err.Error()}
	}
	if err := cg.add(pid); err != nil {
		return nil, &SetupError{Stage: "cgroup", Msg: err.Error(), Errno: errnoOf(err)}
	}
	mech = append(mech, cg.describe()...)
	if before != nil {
		what, err := before(pid)
		if err != nil {
			return nil, &SetupError{Stage: "loopback", Msg: err.Error(), Errno: errnoOf(err)}
		}
		if what != "" {
			mech = append(mech, what)
		}
	}
	werr := l.handOver(ws)
	if se := (*SetupError)(nil); errors.As(werr, &se) {
		return nil, se
	}
	l.release()
	// Read the status even when the handover failed: a trampoline that
	// refused before reading its spec (built with cgo, not PID 1) says why
	// there.
	raw, err := io.ReadAll(io.LimitReader(l.statusR, 64<<10))
	if err != nil {
		return nil, &SetupError{Stage: "status", Msg: err.Error()}
	}
	if werr != nil && !bytes.Contains(raw, []byte(`"stage"`)) {
		return nil, &SetupError{Stage: "spec", Msg: werr.Error(), Errno: errnoOf(werr)}
	}
	ok := false
	for _, line := range bytes.Split(raw, []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m confine.Status
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, &SetupError{Stage: "status", Msg: "unreadable trampoline status"}
		}
		if m.Stage != "" {
			l.spoke = !confine.BeforeHandoff(m.Stage)
			return nil, &SetupError{Stage: m.Stage, Msg: m.Error, Errno: m.Errno}
		}
		l.spoke = true
		if m.OK {
			ok = true
			mech = append(mech, m.Mechanisms...)
		}
	}
	if !ok {
		return nil, &SetupError{Stage: "status", Msg: "trampoline ended without reporting (crashed or killed)"}
	}
	return mech, nil
}

// verifyNamespaces checks, from outside, that the child really is in new
// namespaces rather than trusting the clone flags.
func verifyNamespaces(pid int) ([]string, error) {
	for _, ns := range namespaceNames {
		own, err1 := os.Readlink("/proc/self/ns/" + ns)
		its, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		if own == its {
			return nil, fmt.Errorf("child shares the %s namespace", ns)
		}
	}
	return []string{"namespaces:" + strings.Join(namespaceNames, ",")}, nil
}

// killer ends a run once, remembering the first reason.
type killer struct {
	mu     sync.Mutex
	proc   *os.Process
	reason string
}

func (k *killer) setProcess(p *os.Process) {
	k.mu.Lock()
	k.proc = p
	k.mu.Unlock()
}

// kill sends SIGKILL to the trampoline/pipeline, PID 1 of the run's PID
// namespace: the kernel then kills every process in the namespace, so
// nothing the pipeline started survives, setsid or not (TestHostileSetsid).
func (k *killer) kill(reason string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.reason != "" || k.proc == nil {
		return
	}
	k.reason = reason
	k.proc.Kill()
}

func (k *killer) why() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.reason
}

// watch enforces the wall clock and ctx; the returned func stops it.
func watch(ctx context.Context, kl *killer, wall time.Duration) func() {
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		t := time.NewTimer(wall)
		defer t.Stop()
		select {
		case <-t.C:
			kl.kill(KillWallTime)
		case <-ctx.Done():
			kl.kill(KillCanceled)
		case <-done:
		}
	}()
	return sync.OnceFunc(func() {
		close(done)
		<-exited
	})
}

func errnoOf(err error) int {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return int(errno)
	}
	return 0
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
