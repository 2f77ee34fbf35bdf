// Package sandbox is the only code in Airlock that starts a process.
//
// # Invariant
//
// A pipeline — untrusted code — runs only through [Sandbox.Run], and only
// confined by the kernel: it cannot reach any network, cannot read outside
// the pools it was given and the system files needed to run programs,
// cannot write outside its run's output and temp directories, cannot see or
// signal host processes, and cannot outlive its limits. If any mechanism
// this depends on is missing, [New] fails with [ErrUnavailable] (fail
// closed) and says which; [Probe] reports the same for `airlock doctor`.
// An architecture test keeps os/exec out of every other package.
//
// # How
//
// The server re-executes itself as a hidden trampoline subcommand
// ([TrampolineArg]; main calls [MaybeRunTrampoline] first). The parent
// starts it with os/exec (argv only, never a shell) in new network, PID,
// IPC and UTS namespaces, verifies the namespaces from /proc, moves it into
// a per-run cgroup, and only then sends the run's spec as JSON over a pipe.
// The trampoline, PID 1 of its namespace, then sets rlimits, drops to an
// unprivileged uid/gid with no groups and no capabilities, sets
// no_new_privs, applies Landlock and a seccomp filter, reports what it
// applied over a close-on-exec status pipe, and execve's the pipeline with
// exactly the environment in [Spec.Env]. The wall clock (and the caller's
// context) SIGKILL PID 1, which makes the kernel kill the whole namespace.
// Each file holds one mechanism and names the attacks it blocks and the
// test that proves it: namespaces.go, cgroup.go, rlimit.go, creds.go,
// landlock.go, seccomp.go, trampoline.go, run.go.
//
// # Limits, honestly
//
//   - The server must run as root (namespaces, cgroups, the uid drop) and
//     the trampoline binary must be built with CGO_ENABLED=0.
//   - All pipelines run as one uid (default 65534). They cannot interfere
//     with each other through the filesystem (Landlock) or signals (PID
//     namespaces, Landlock scoping), but RLIMIT_NPROC is per uid and host
//     wide, so it is only a backstop; the pids cgroup is the real limit.
//   - Pools and the run directories must be reachable by that uid under
//     ordinary permissions (a pool under a 0700 home is unreadable even
//     where Landlock allows it). Writable directories are chowned to it.
//   - Disk use is bounded only per file (RLIMIT_FSIZE): a pipeline can
//     create many files in its writable directories until the filesystem
//     holding them is full. Put the workspace base on its own filesystem or
//     quota if that matters.
//   - RLIMIT_CPU is per process; a pipeline that forks many CPU-bound
//     children is bounded by the wall clock, not by Limits.CPU alone.
//   - The seccomp filter is a deny list of dangerous interfaces, not an
//     allow list of what programs need; Landlock, the namespaces and the
//     uid drop are the walls, seccomp narrows the kernel surface behind
//     them. The kernel itself is trusted: a kernel exploit reachable from
//     the allowed syscalls escapes any of this.
//   - Landlock does not hide metadata reached by path walk (stat of a
//     denied file works); it denies opening, listing, writing and executing.
//   - The mount namespace is shared: mounts are not changed, Landlock
//     decides access. /proc and /sys are not granted at all.
//   - On this generation of machines only cgroup v1 memory and pids work;
//     the v2 path is used when a v2 hierarchy delegates those controllers
//     and is not exercised by the tests here.
package sandbox
