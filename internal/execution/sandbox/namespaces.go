//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"syscall"

	"github.com/airlock-dev/airlock/internal/execution/sandbox/confine"
	"golang.org/x/sys/unix"
)

// The trampoline is started in fresh namespaces (SysProcAttr.Cloneflags):
//
//   - network: the namespace has only a loopback interface, and it is down.
//     No route exists to anything, so TCP, UDP, MPTCP, DNS and raw traffic
//     all fail whatever Landlock or seccomp say (TestHostileUDP,
//     TestHostileDNS, TestHostileMPTCP). This is the network wall; Landlock
//     alone covers TCP only. A run given a Spec.Loopback has lo up and one
//     listener on it, the server's (loopback.go); still no route out.
//   - PID: the trampoline, then the pipeline, is PID 1 of its own namespace.
//     It cannot see or signal host processes, and when it dies (normally or
//     by the wall-clock SIGKILL) the kernel kills every other process in the
//     namespace — a `setsid` daemon cannot outlive the run (TestHostileSetsid).
//   - IPC: no System V IPC or POSIX message queues shared with the host.
//   - UTS: the hostname is the sandbox's own ("airlock").
//   - mount: the trampoline builds the run's own root filesystem in it
//     (mounts.go): the manifest's pool files, a quota tmpfs for /out and
//     /tmp, stable paths. Nothing mounted there is visible on the host.
//
// No user namespace is used: the parent is root and the trampoline drops to
// an unprivileged uid instead (creds.go).
const cloneFlags = unix.CLONE_NEWNET | unix.CLONE_NEWPID | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWNS

var namespaceNames = []string{"net", "pid", "ipc", "uts", "mnt"}

// namespacesAvailable checks that the kernel has the namespaces and that
// this process may create them.
func namespacesAvailable() error {
	for _, ns := range namespaceNames {
		if _, err := os.Stat("/proc/self/ns/" + ns); err != nil {
			return fmt.Errorf("%s namespace: %w", ns, err)
		}
	}
	if !confine.HasCaps(unix.CAP_SYS_ADMIN) {
		return fmt.Errorf("creating namespaces needs CAP_SYS_ADMIN (run as root)")
	}
	return nil
}

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags: cloneFlags,
		// If the server dies, so does the sandbox. The trampoline sets it
		// again after the uid drop, which clears it.
		Pdeathsig: syscall.SIGKILL,
	}
}
