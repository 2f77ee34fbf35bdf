// Package confine is the sandbox trampoline: the code that runs inside a
// pipeline's fresh namespaces, as PID 1, confines itself (its own root,
// rlimits, the uid drop, no_new_privs, Landlock, seccomp) and execs the
// pipeline. Package sandbox, the parent side, starts it and speaks to it
// through [Spec] (fd 3) and [Status] (fd 4).
//
// # Invariant
//
// The trampoline decides before the airlock binary's heavy packages are
// initialised: [MaybeRunTrampoline] is called from this package's init,
// and Go initialises, at each step, the first package in import-path
// order whose imports are all initialised. This package imports the
// standard library and x/sys only, and none of the packages Go reaches
// late — net, runtime/debug, os/exec and log/slog come after
// internal/policy/poisoning, path/filepath after ~50 more
// (TestTrampolineImports) — so it is ready as soon as x/sys/unix is, and
// runs after ~90 light packages (~90 KB allocated in all) and before, for
// instance, internal/policy/poisoning, whose word lists and regular
// expressions allocate 8 MB at init (the trampoline's start took ~90 ms
// of CPU before this package, ~30 ms with it, at the load of issue 27's
// measurements). Every pipeline run pays the trampoline's start, so
// what runs before it is what the run waits for; less code also runs
// before the confinement, not more. TestTrampolineStartsBeforeHeavyInit
// builds the airlock binary and checks that no package allocating 1 MB or
// more at init, and not poisoning, is initialised before the trampoline
// decides.
package confine

// Stable paths inside the sandbox (package sandbox re-exports them).
const (
	OutDir       = "/out"   // the run's outputs (writable; what Collect reads)
	TempDir      = "/tmp"   // scratch (writable when Spec.Temp)
	PoolMountDir = "/pools" // parent of the pools, /pools/<ID>
)

// StagePoolAccess is the failing stage when a pool file is not readable by
// the sandbox user (sandbox.ErrPoolUnreadable).
const StagePoolAccess = "pool_access"

// BuiltWithCgo reports whether this binary was linked with cgo, which the
// trampoline refuses (the uid change goes through libc's cross-thread
// machinery and Landlock inside a PID namespace hangs). It is the build's
// own `cgo` constraint (cgo_on.go / cgo_off.go), the same setting
// debug.ReadBuildInfo reports as CGO_ENABLED, without importing
// runtime/debug (see the package invariant).
func BuiltWithCgo() bool { return builtWithCgo }
