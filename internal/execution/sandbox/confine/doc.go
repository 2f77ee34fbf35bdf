// Package confine is the sandbox trampoline: the code that runs inside a
// pipeline's fresh namespaces, as PID 1, confines itself (its own root,
// rlimits, the uid drop, no_new_privs, Landlock, seccomp) and execs the
// pipeline. Package sandbox, the parent side, starts it and speaks to it
// through [Spec] (fd 3) and [Status] (fd 4).
//
// # Invariant
//
// The trampoline runs before any package of the airlock binary that this
// one does not import is initialised: [MaybeRunTrampoline] is called from
// this package's init, and Go initialises packages in import-path order
// among those whose imports are done, so this package — which imports the
// standard library and x/sys only, and no package that sorts after
// internal/policy (net, runtime/debug, os/exec, log/slog: see
// TestTrampolineImports) — is initialised before the heavy ones such as
// internal/policy/poisoning, whose word lists and regular expressions cost
// ~90 ms of CPU at init (issue 27). Every pipeline run pays the
// trampoline's start, so what runs before it is what the run waits for;
// less code also runs before the confinement, not more.
// TestTrampolineStartsBeforeHeavyInit builds the airlock binary and checks
// that no airlock package outside this one's imports is initialised before
// the trampoline decides.
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
