package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/airlock-dev/airlock/internal/execution/sandbox/confine"
)

// Sentinel errors. Callers test them with errors.Is; the wrapped text says
// which mechanism or field is at fault.
var (
	// ErrUnavailable means a required isolation mechanism is missing or
	// failed its self-test, so no sandbox can be built (fail closed).
	ErrUnavailable = errors.New("sandbox unavailable")
	// ErrInvalidSpec means a Spec or Options value was refused before
	// anything was started.
	ErrInvalidSpec = errors.New("invalid sandbox spec")
	// ErrSetup means the sandbox could not be set up for one run (the
	// trampoline refused, or the program could not be executed); the
	// error is a *SetupError.
	ErrSetup = errors.New("sandbox setup failed")
	// ErrPoolUnreadable means a manifest file of a pool is bound but not
	// readable by the sandbox uid: root binds it wherever it lies, but a
	// bind keeps the file's owner and mode (a 0600 file in a home
	// directory). The error is a *SetupError at StagePoolAccess, whose Msg
	// names the pool and the file by their sandbox names, never the host
	// path.
	ErrPoolUnreadable = errors.New("pool file not readable by the sandbox user")
)

// StagePoolAccess is the SetupError stage of ErrPoolUnreadable.
const StagePoolAccess = confine.StagePoolAccess

// SetupError is a failure inside the trampoline, before or at execve.
type SetupError struct {
	Stage string // "spec", "mounts", "rlimits", "uid_drop", "chdir", "landlock", "seccomp", "exec", ...
	Msg   string
	Errno int // the errno when the failure was a system call, else 0
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("sandbox setup failed at %s: %s", e.Stage, e.Msg)
}

// Is makes errors.Is(err, ErrSetup) true for every *SetupError, and
// errors.Is(err, ErrPoolUnreadable) for one at StagePoolAccess.
func (e *SetupError) Is(target error) bool {
	return target == ErrSetup || (target == ErrPoolUnreadable && e.Stage == StagePoolAccess)
}

// UnavailableError is New's refusal: why no sandbox can be built here,
// with the report of every mechanism New checked (its self-test included
// once it ran). It matches ErrUnavailable. `airlock doctor` prints the
// report, so what it says is what New decided, not a second opinion.
type UnavailableError struct {
	Reason string
	Report Report
}

func (e *UnavailableError) Error() string { return ErrUnavailable.Error() + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Unwrap() error { return ErrUnavailable }

// Spec is one pipeline run. Argv is executed directly (never through a
// shell); a pipeline that is itself a shell script is run as
// {"/bin/sh", "/path/to/script"}.
//
// The pipeline runs in its own root filesystem (mounts.go), so every path it
// sees is a stable sandbox path, never a host path of the run: its pools are
// at /pools/<ID> ([PoolMountDir]), its outputs go to /out ([OutDir]) and its
// scratch space is /tmp ([TempDir]). Argv, Env and Dir use those paths.
type Spec struct {
	// Argv[0] is an absolute path, a path relative to Dir, or a bare name
	// looked up in the PATH of Env (after confinement).
	Argv []string
	// Env is the pipeline's entire environment, KEY=value. Nothing of the
	// server's environment is inherited; PATH defaults to DefaultPath.
	Env []string
	// Dir is the working directory inside the sandbox (absolute); default
	// OutDir.
	Dir string
	// Pools are mounted read-only at /pools/<ID>, each holding exactly the
	// listed files and nothing else of its host directory.
	Pools []Pool
	// ReadOnly are extra host files or directories (the pipeline's own
	// scripts) bound read-only, and executable, at the same path inside the
	// sandbox. They may not lie under /out, /pools, /proc, /sys or /dev.
	ReadOnly []string
	// Temp makes /tmp a writable scratch directory; without it /tmp is not
	// writable. /out and /tmp share the run's disk quota (Limits.DiskBytes).
	Temp bool
	// Collect, when set, is called after the pipeline has ended (its PID
	// namespace is gone, nothing can write any more) and before the run's
	// filesystem is released, with /out opened as a root. It is the only
	// way to read what the pipeline wrote; an error from it is returned by
	// Run, wrapped, together with the Result.
	Collect func(out *os.Root) error
	// Stdin is fed to the pipeline; nil means /dev/null.
	Stdin []byte
	// StdinFile and StdoutFile, when set, are the process's stdin and
	// stdout themselves (one end of a pipe each): a long-running server
	// inside the sandbox — an upstream MCP server over stdio — talks to
	// its caller through them while it runs. StdinFile replaces Stdin;
	// with StdoutFile, Result.Stdout stays empty. The caller keeps and
	// closes its own copies (after Run returns).
	StdinFile, StdoutFile *os.File
	// StderrFile, when set, is the process's stderr (a pipe's write end):
	// a long-lived server's log is drained by its caller, which keeps
	// what it needs (the last lines), instead of being captured here,
	// where Limits.OutputBytes would cap, and a flood would kill, a server
	// that logs a line per request. Result.Stderr then stays empty.
	StderrFile *os.File
	// Loopback, when set, is the run's one way out: the sandbox brings up
	// the loopback interface of the run's (otherwise empty) network
	// namespace, opens a TCP listener on 127.0.0.1:Loopback.Port inside
	// it — owned by this process, not by the pipeline — and lets the
	// pipeline connect to that port and no other (Landlock). Nil: no
	// interface is up and every connect fails (the default).
	Loopback *Loopback
	Limits   Limits
}

// Loopback is a listener the caller serves inside the run's network
// namespace (see Spec.Loopback): an upstream's egress proxy.
type Loopback struct {
	// Port on 127.0.0.1 inside the run (1-65535).
	Port uint16
	// Serve is called, on its own goroutine, with the listener before
	// the pipeline starts; the listener is closed when the run ends, so
	// Serve returns then (it must not outlive its Accept error).
	Serve func(l net.Listener)
}

// Pool is one directory of data files given to a pipeline.
type Pool struct {
	// ID names the mount point /pools/<ID>: 1-64 of [a-z0-9_.-], starting
	// with a letter or digit.
	ID string
	// Dir is the pool's host directory (absolute).
	Dir string
	// Files are the names, relative slash paths, that the pipeline may
	// see: the pool's manifest. A name that is missing on disk, is not a
	// regular file, or resolves outside Dir refuses the run.
	Files []string
}

// Stable paths inside the sandbox.
const (
	OutDir       = confine.OutDir       // the run's outputs (writable; what Collect reads)
	TempDir      = confine.TempDir      // scratch (writable when Spec.Temp)
	PoolMountDir = confine.PoolMountDir // parent of the pools, /pools/<ID>
)

// Limits bound one run. A zero field takes the default in DefaultLimits.
type Limits struct {
	Wall          time.Duration // wall clock; kills the whole PID namespace
	CPU           time.Duration // CPU time per process (RLIMIT_CPU, whole seconds)
	MemoryBytes   int64         // memory charged to the run's cgroup
	Procs         int           // tasks (processes + threads) in the run's cgroup; min 8
	OutputBytes   int64         // cap on captured stdout and on captured stderr, each
	FileSizeBytes int64         // largest file the pipeline may write (RLIMIT_FSIZE)
	OpenFiles     int           // descriptors per process (RLIMIT_NOFILE)
	// DiskBytes bounds everything the run writes to /out and /tmp
	// together: they live on one size-limited tmpfs (the quota), so a
	// pipeline cannot fill the disk that holds the audit store. Writes past
	// it fail with ENOSPC and the Result lists the limit "disk". The pages
	// are memory charged to the run's cgroup, so MemoryBytes bounds it too.
	DiskBytes int64
}

// DefaultLimits are used for zero fields of Spec.Limits.
var DefaultLimits = Limits{
	Wall:          60 * time.Second,
	CPU:           30 * time.Second,
	MemoryBytes:   512 << 20,
	Procs:         64,
	OutputBytes:   1 << 20,
	FileSizeBytes: 256 << 20,
	OpenFiles:     256,
	DiskBytes:     128 << 20,
}

// DefaultPath is the PATH a pipeline gets when Spec.Env sets none.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// minProcs leaves room for the trampoline's own threads, which are in the
// run's pids cgroup before it execs the pipeline.
const minProcs = 8

// floodFactor: once a stream has produced this many times its OutputBytes
// cap, the run is killed with KillReason "output" instead of being drained
// until the wall clock ends it.
const floodFactor = 16

// Kill reasons reported in Result.KillReason.
const (
	KillWallTime = "wall_time" // Limits.Wall elapsed; the PID namespace was killed
	KillCPUTime  = "cpu_time"  // RLIMIT_CPU (SIGXCPU, then SIGKILL)
	KillMemory   = "memory"    // the cgroup's OOM killer ended a process
	KillOutput   = "output"    // stdout or stderr flooded past floodFactor × OutputBytes
	KillCanceled = "canceled"  // the caller's context was done
	KillSeccomp  = "seccomp"   // killed by the seccomp filter (foreign-arch syscall)
	KillFileSize = "file_size" // RLIMIT_FSIZE (SIGXFSZ)
	// LimitDisk is listed in Result.LimitsHit (not a kill reason) when the
	// run's /out + /tmp quota filled up.
	LimitDisk = "disk"
)

// Result is what a run did. Run returns a Result for every run that
// started, whatever the pipeline did; an error means the sandbox itself
// could not do its job.
type Result struct {
	// ExitCode is the pipeline's exit status, or -1 when a signal ended it.
	ExitCode int
	Signal   string // e.g. "SIGKILL"; "" when it exited
	// Killed is true when a sandbox limit ended the pipeline (or one of its
	// processes); KillReason says which (Kill* constants).
	Killed     bool
	KillReason string
	// LimitsHit lists every limit that refused or ended something, even
	// without killing the main process: "procs" (fork refused by the pids
	// cgroup), "memory", "output", "wall_time", "cpu_time", "disk" (the
	// quota of /out and /tmp is full: writes failed with ENOSPC).
	LimitsHit []string
	// DiskBytes is what /out and /tmp held when the run ended.
	DiskBytes int64

	Duration        time.Duration
	UserCPU, SysCPU time.Duration
	// MaxRSSBytes is the peak memory charged to the run's cgroup: all its
	// processes together, page cache included. (getrusage's ru_maxrss is
	// not used: with vfork-style spawning it reports the server's own RSS.)
	MaxRSSBytes int64

	Stdout, Stderr                   []byte
	StdoutTruncated, StderrTruncated bool

	// Mechanisms lists the isolation actually applied to this run, as
	// verified by the parent (namespaces, cgroups) and reported by the
	// trampoline (rlimits, uid drop, no_new_privs, Landlock, seccomp).
	Mechanisms []string
}

// Options configure a Sandbox; nil means all defaults.
type Options struct {
	// TrampolinePath is the binary re-executed as the trampoline; it must
	// call MaybeRunTrampoline first thing in main and be built without cgo.
	// Default: the embedded trampoline when this binary carries one
	// (embedded.go), else os.Executable().
	TrampolinePath string
	// UID and GID the pipeline runs as; 0 means 65534 (nobody/nogroup).
	// Root cannot be chosen.
	UID, GID int
	// CgroupParent is the cgroup, relative to each hierarchy's root (for
	// example "/airlock"), under which run cgroups are created; it is
	// created if missing. Default: the server's own cgroup. On a pure
	// cgroup v2 host the server's own cgroup holds processes and so cannot
	// enable controllers for children: point this at an empty, delegated
	// cgroup (systemd Delegate=yes) instead.
	CgroupParent string
	// Logger receives one debug line per run; nil discards.
	Logger *slog.Logger
	// OnRun, when set, is told how every Run ended (res nil when nothing
	// ran), after the run: metrics. It must not block.
	OnRun func(res *Result, err error)
	// Spare keeps one trampoline started in advance, in its own fresh
	// namespaces, for the next run (spare.go): a run then skips the
	// trampoline's start. Each spare serves exactly one run. A Sandbox
	// with a spare must be closed (Close) when no longer used.
	Spare bool
}
