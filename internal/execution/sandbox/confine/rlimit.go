//go:build linux

package confine

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Resource limits set in the trampoline, inherited by the pipeline and every
// process it starts. Each rlimit is per process; the whole-run limits are
// the cgroup (memory, tasks) and the wall clock (cgroup.go, sandbox.go).
//
//   - RLIMIT_CPU: soft = Limits.CPU (SIGXCPU), hard = soft+1s (SIGKILL), so
//     an endless loop dies even if it ignores SIGXCPU (TestHostileSpin).
//   - RLIMIT_NOFILE: bounds descriptors per process.
//   - RLIMIT_FSIZE: bounds any single file the pipeline writes: SIGXFSZ, or
//     EFBIG where the signal is ignored (TestHostileFileSize).
//
// The pipeline is PID 1 of its namespace, and the kernel does not deliver
// a signal whose action is the default to a namespace's init unless it
// comes from outside: so PID 1 itself never dies of SIGXCPU, SIGXFSZ or
// SIGPIPE (it gets EFBIG/EPIPE, and the hard CPU limit's SIGKILL, which is
// always delivered). The processes it starts get the usual signals.
//   - RLIMIT_NPROC: counted per real UID across the host, so it is only a
//     backstop; the exact per-run task limit is the pids cgroup
//     (TestHostileForkBomb).
//   - RLIMIT_CORE = 0: a crashing pipeline leaves no core file anywhere.
//
// RLIMIT_AS is deliberately not set: it counts reserved address space, not
// memory, and Go, Java and sanitizer-built programs reserve far more than
// they use. The memory cgroup limits what is actually charged.
//
// syscall.Setrlimit (not x/sys) is used on purpose: for RLIMIT_NOFILE it
// tells the Go runtime not to restore its original limit in syscall.Exec.
func applyRlimits(r Rlimits) error {
	set := func(name string, res int, cur, max uint64) error {
		if err := syscall.Setrlimit(res, &syscall.Rlimit{Cur: cur, Max: max}); err != nil {
			return fmt.Errorf("setrlimit(%s): %w", name, err)
		}
		return nil
	}
	if r.CPUSeconds > 0 {
		if err := set("CPU", syscall.RLIMIT_CPU, r.CPUSeconds, r.CPUSeconds+1); err != nil {
			return err
		}
	}
	if r.NoFile > 0 {
		if err := set("NOFILE", syscall.RLIMIT_NOFILE, r.NoFile, r.NoFile); err != nil {
			return err
		}
	}
	if r.FSize > 0 {
		if err := set("FSIZE", syscall.RLIMIT_FSIZE, r.FSize, r.FSize); err != nil {
			return err
		}
	}
	if r.NProc > 0 {
		if err := set("NPROC", unix.RLIMIT_NPROC, r.NProc, r.NProc); err != nil {
			return err
		}
	}
	return set("CORE", syscall.RLIMIT_CORE, 0, 0)
}
