//go:build linux

package confine

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// TrampolineArg is the hidden subcommand (os.Args[1]) under which the server
// binary re-executes itself to become a sandbox trampoline.
const TrampolineArg = "__airlock-sandbox-trampoline"

// File descriptors the parent hands the trampoline (os/exec ExtraFiles).
const (
	SpecFD   = 3 // a Unix socket: the run's descriptors, then the JSON Spec, then EOF (handoff.go)
	StatusFD = 4 // write: Status lines; close-on-exec
	// ScratchFD (5, mounts.go): the run's quota tmpfs, a detached mount.
)

// ExitSetupFailed is the trampoline's exit status when it refused to start
// the pipeline; the reason travels on the status pipe.
const ExitSetupFailed = 125

// init runs the trampoline as early as package initialisation allows
// (issues 11 and 27; the package doc says why this package is initialised
// before the heavy ones, TestTrampolineStartsBeforeHeavyInit proves it).
// Less code runs before the confinement, not more; main still calls
// MaybeRunTrampoline (a no-op by then) for binaries that do not link this
// init first.
func init() { MaybeRunTrampoline() }

// MaybeRunTrampoline must be the first thing main() calls. When the process
// was started as a sandbox trampoline (os.Args[1] == TrampolineArg) it
// confines itself and execs the pipeline, and never returns; otherwise it
// returns immediately and does nothing.
//
// The binary that calls it must be built with CGO_ENABLED=0: with cgo, the
// uid change goes through libc's cross-thread machinery and Landlock inside
// a PID namespace hangs. The trampoline checks its own build settings and
// refuses to run when cgo was enabled.
func MaybeRunTrampoline() {
	if len(os.Args) < 2 || os.Args[1] != TrampolineArg {
		return
	}
	// Landlock, seccomp and no_new_privs apply to the calling thread, and
	// execve keeps the calling thread's state: everything from here to the
	// execve must happen on this one OS thread.
	runtime.LockOSThread()
	status := os.NewFile(StatusFD, "status")
	stage, err := runTrampoline(status)
	if err != nil {
		msg := Status{Stage: stage, Error: err.Error()}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			msg.Errno = int(errno)
		}
		writeStatus(status, msg)
		os.Exit(ExitSetupFailed)
	}
	os.Exit(0) // dry run
}

// runTrampoline applies every mechanism in order and execs the pipeline.
// It returns only on failure (with the failing stage) or after a dry run.
// The order matters:
//   - the run's descriptors and spec are read first: the parent sends them
//     only after moving this process into the run's cgroups, so nothing
//     below runs outside them (and a spare started early holds nothing of
//     a run until then);
//   - cap_last_cap is read, and every mount made private, before the run
//     is handed over (neither depends on it);
//   - the new root (mounts.go), rlimits and the hostname need root, so they
//     precede the uid drop;
//   - the pool files' readability and chdir follow the drop, so both are
//     checked with the pipeline's own permissions;
//   - no_new_privs precedes Landlock and seccomp, which require it;
//   - seccomp is last because it denies calls the earlier steps make.
func runTrampoline(status *os.File) (stage string, err error) {
	if os.Getpid() != 1 {
		// Run by hand outside the sandbox's PID namespace: refuse, so
		// nobody mistakes this for a sandboxed start.
		return "namespaces", errors.New("trampoline is not PID 1 of a new PID namespace")
	}
	if BuiltWithCgo() {
		return "build", errors.New("trampoline binary was built with cgo; rebuild with CGO_ENABLED=0")
	}
	unix.CloseOnExec(StatusFD)
	// What needs no run is done before waiting for one: a spare does it
	// while no run waits (handoff.go). cap_last_cap is read before the
	// new root hides /proc; making every mount of this (new, own) mount
	// namespace private keeps anything mounted below off the host.
	lastCap, err := capLastCap()
	if err != nil {
		return StagePrepare, err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return StagePrepare, fmt.Errorf("making mounts private: %w", err)
	}
	warmUp()
	sayReady(SpecFD)
	// Blocks here until the run is handed over (handoff.go): a spare
	// waits at this point, holding nothing of any run.
	if err := receiveRun(SpecFD); err != nil {
		return "spec", err
	}
	specFile := os.NewFile(SpecFD, "spec")
	ws, err := DecodeSpec(specFile)
	specFile.Close()
	if err != nil {
		return "spec", err
	}
	var mech []string
	if ws.Hostname != "" {
		if err := unix.Sethostname([]byte(ws.Hostname)); err != nil {
			return "hostname", err
		}
	}
	unix.CloseOnExec(ScratchFD)
	if err := buildRoot(ws, ScratchFD); err != nil {
		return "mounts", err
	}
	mech = append(mech, "mount_ns:private_root,pools_by_manifest,tmpfs_quota")
	if err := applyRlimits(ws.Rlimits); err != nil {
		return "rlimits", err
	}
	mech = append(mech, "rlimits:cpu,nofile,fsize,nproc,core=0")
	if err := dropPrivileges(ws.UID, ws.GID, lastCap); err != nil {
		return "uid_drop", err
	}
	mech = append(mech, fmt.Sprintf("uid_drop:%d:%d,no_groups,no_caps", ws.UID, ws.GID))
	if err := poolsReadable(ws); err != nil {
		return StagePoolAccess, err
	}
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return "pdeathsig", err
	}
	if err := unix.Chdir(ws.Dir); err != nil {
		return "chdir", err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return "no_new_privs", err
	}
	mech = append(mech, "no_new_privs")
	abi, err := LandlockABI()
	if err != nil {
		return "landlock", err
	}
	if err := applyLandlock(abi, ws.Rules, ws.ConnectPorts); err != nil {
		return "landlock", err
	}
	mech = append(mech, "landlock:abi"+strconv.Itoa(abi))
	if err := installSeccomp(); err != nil {
		return "seccomp", err
	}
	mech = append(mech, "seccomp:"+runtime.GOARCH)
	writeStatus(status, Status{OK: true, Mechanisms: mech})
	if ws.DryRun {
		return "", nil
	}
	// Nothing but stdin/stdout/stderr may leak into the pipeline.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return "close_fds", err
	}
	return "exec", execPipeline(ws.Argv, ws.Env)
}

// execPipeline execs argv with execvp semantics: a name without a slash is
// looked up in the pipeline's own PATH (from env), after confinement, so the
// lookup sees exactly what the pipeline may run. Relative PATH entries are
// ignored. It returns only on failure.
func execPipeline(argv, env []string) error {
	name := argv[0]
	if strings.Contains(name, "/") {
		return syscall.Exec(name, argv, env)
	}
	search := ""
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			search = v
		}
	}
	var first error
	// strings and path, not path/filepath: Go initialises path/filepath
	// late, and this package's imports decide how early it runs (package
	// doc; Linux paths are slash paths, and an empty PATH searches nothing
	// as filepath.SplitList's empty list did).
	for _, dir := range strings.Split(search, ":") {
		if !path.IsAbs(dir) {
			continue
		}
		err := syscall.Exec(path.Join(dir, name), argv, env)
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = fmt.Errorf("%q not found in PATH: %w", name, syscall.ENOENT)
	}
	return first
}

func writeStatus(f *os.File, msg Status) {
	b, _ := json.Marshal(msg)
	f.Write(append(b, '\n'))
}
