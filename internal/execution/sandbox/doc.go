// Package sandbox is the only code in Airlock that starts a process.
//
// # Invariant
//
// A pipeline — untrusted code — runs only through [Sandbox.Run], and only
// confined by the kernel: it cannot reach any network (with one exception
// a caller asks for: [Spec.Loopback], a listener the server opens inside
// the run's network namespace and serves itself, the one port the run may
// connect to — loopback.go), cannot read anything
// but the manifest files of the pools it was given and the system files
// needed to run programs, cannot write outside its run's /out and /tmp (one
// tmpfs, the run's disk quota), sees only stable sandbox paths (/pools/<id>,
// /out, /tmp) rather than host paths, cannot see or signal host processes,
// and cannot outlive its limits. Every run gets namespaces, a tmpfs and
// a cgroup nothing else ever ran in, also when its trampoline was started
// before the run (a spare serves exactly one run). If any mechanism
// this depends on is missing, [New] fails with [ErrUnavailable] (fail
// closed) and says which; [Probe] reports the same for `airlock doctor`.
// An architecture test keeps os/exec out of every other package.
//
// # How
//
// The trampoline is a hidden subcommand ([TrampolineArg]; main calls
// [MaybeRunTrampoline] first) of the small binary `make build` embeds
// (package trampolinebin, run from a sealed memfd: embedded.go), or of
// the server binary itself when it carries none. The parent
// starts it with os/exec (argv only, never a shell) in new network, PID,
// IPC, UTS and mount namespaces, holding nothing of any run, verifies the
// namespaces from /proc, moves it into a per-run cgroup with the run's
// limits, and only then hands over, on a Unix socket, the run's quota
// tmpfs and stdio and then its spec as JSON (confine/handoff.go). With
// [Options.Spare] the trampoline is started before its run (a spare,
// spare.go): each spare serves exactly one run and is never reused, so
// every run still gets namespaces, a tmpfs and a cgroup nothing else ever
// ran in; a spare dies with the server, and [Sandbox.StopSpare] (the kill
// switch) and [Sandbox.Close] (shutdown) end it. The trampoline, PID 1
// of its namespace (its code is the leaf package confine, initialised
// before the binary's heavy packages), then builds the run's root and
// pivots into it (confine/mounts.go), sets rlimits, drops to an
// unprivileged uid/gid with no groups and no capabilities, sets
// no_new_privs, applies Landlock and a seccomp filter, reports what it
// applied over a close-on-exec status pipe, and execve's the pipeline with
// exactly the environment in [Spec.Env]. The wall clock (and the caller's
// context) SIGKILL PID 1, which makes the kernel kill the whole namespace.
// The parent then hands /out to [Spec.Collect] through its own descriptor
// to the tmpfs and frees it.
// Each file holds one mechanism and names the attacks it blocks and the
// test that proves it: namespaces.go, mounts.go, cgroup.go, run.go,
// spare.go, loopback.go here; confine/mounts.go, rlimit.go, creds.go, landlock.go,
// seccomp.go, trampoline.go, handoff.go in the trampoline's package.
//
// # Limits, honestly
//
//   - The server must run as root (namespaces, cgroups, the uid drop) and
//     the trampoline binary must be built with CGO_ENABLED=0.
//   - All pipelines run as one uid (default 65534). They cannot interfere
//     with each other through the filesystem (Landlock) or signals (PID
//     namespaces, Landlock scoping), but RLIMIT_NPROC is per uid and host
//     wide, so it is only a backstop; the pids cgroup is the real limit.
//   - Pool files must be readable by that uid under ordinary permissions
//     (mode o+r, or an ACL); they are bound by root before the uid drop, so
//     their directories need not be traversable by it (a pool in a 0700
//     home: TestPoolUnderPrivateDir). A bind keeps the file's owner and
//     mode, so a file the uid cannot read refuses the run before the
//     pipeline starts ([ErrPoolUnreadable], TestPoolFileUnreadable). Pool
//     files are bound live: a file rewritten in place after the server's
//     hash check is read as rewritten — which is
//     why run_pipeline checks the files again once the run has ended and
//     publishes nothing if one changed (sources.Context.VerifyUnchanged).
//   - Disk use is bounded by the run's tmpfs (Limits.DiskBytes) and per
//     file (RLIMIT_FSIZE). The tmpfs is memory charged to the run's cgroup:
//     a quota above Limits.MemoryBytes is bounded by the memory limit.
//   - Spec.ReadOnly paths appear at their host path (operator-chosen
//     scripts); they may not lie under /out, /pools, /proc, /sys or /dev.
//   - Programs that need /proc, /sys or files of /etc beyond the loader's
//     and libc's (resolv.conf, ssl certificates) do not find them.
//   - RLIMIT_CPU is per process; a pipeline that forks many CPU-bound
//     children is bounded by the wall clock, not by Limits.CPU alone.
//   - The seccomp filter is a deny list of dangerous interfaces, not an
//     allow list of what programs need; Landlock, the namespaces and the
//     uid drop are the walls, seccomp narrows the kernel surface behind
//     them. The kernel itself is trusted: a kernel exploit reachable from
//     the allowed syscalls escapes any of this.
//   - Landlock does not hide metadata reached by path walk (stat of a
//     denied file works); it denies opening, listing, writing and executing.
//   - The run's root is built under a fixed stage directory
//     ($TMPDIR/.airlock-sandbox-root, root-owned 0700, refused if it is
//     anything else) inside the run's own mount namespace; the host never
//     sees the mount. Requires Linux 5.12+ (fsopen, open_tree, move_mount,
//     mount_setattr, openat2). /proc and /sys are not mounted.
//   - On this generation of machines only cgroup v1 memory and pids work;
//     the v2 path is used when a v2 hierarchy delegates those controllers
//     and is not exercised by the tests here.
package sandbox
