package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
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
)

// SetupError is a failure inside the trampoline, before or at execve.
type SetupError struct {
	Stage string // "spec", "rlimits", "uid_drop", "chdir", "landlock", "seccomp", "exec", ...
	Msg   string
	Errno int // the errno when the failure was a system call, else 0
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("sandbox setup failed at %s: %s", e.Stage, e.Msg)
}

// Is makes errors.Is(err, ErrSetup) true for every *SetupError.
func (e *SetupError) Is(target error) bool { return target == ErrSetup }

// Spec is one pipeline run. Argv is executed directly (never through a
// shell); a pipeline that is itself a shell script is run as
// {"/bin/sh", "/path/to/script"}.
type Spec struct {
	// Argv[0] is an absolute path, a path relative to Dir, or a bare name
	// looked up in the PATH of Env (after confinement).
	Argv []string
	// Env is the pipeline's entire environment, KEY=value. Nothing of the
	// server's environment is inherited; PATH defaults to DefaultPath.
	// /tmp is not writable in the sandbox, so callers set TMPDIR (and HOME
	// if the program needs one) to a Writable directory.
	Env []string
	// Dir is the working directory (absolute); default: the first Writable
	// directory, else "/".
	Dir string
	// ReadOnly are directories or files the pipeline may read and execute
	// (the bound pools, the pipeline's own scripts).
	ReadOnly []string
	// Writable are directories the pipeline may create, write and remove
	// files in (the run's output and temp directories). Each is handed to
	// the sandbox's UID/GID (chown) for the run; it must be a real
	// directory, not a symlink.
	Writable []string
	// Stdin is fed to the pipeline; nil means /dev/null.
	Stdin  []byte
	Limits Limits
}

// Limits bound one run. A zero field takes the default in DefaultLimits.
type Limits struct {
	Wall          time.Duration // wall clock; kills the whole PID namespace
	CPU           time.Duration // CPU time per process (RLIMIT_CPU, whole seconds)
	MemoryBytes   int64         // memory charged to the run's cgroup
	Procs         int           // tasks (processes + threads) in the run's cgroup; min 8
	OutputBytes   int64         // cap on captured stdout and on captured stderr, each
	FileSizeBytes int64         // largest file the pipeline may write (RLIMIT_FSIZE)
	OpenFiles     int           // descriptors per process (RLIMIT_NOFILE)
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
	// cgroup), "memory", "output", "wall_time", "cpu_time".
	LimitsHit []string

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
	// Default: os.Executable().
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
}
