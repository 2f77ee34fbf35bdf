//go:build linux

package confine

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock confines the pipeline's filesystem view: it may read the pools
// and the system directories needed to run programs, write only the run's
// output and temp directories, and nothing else. Landlock also denies TCP
// bind/connect (ABI 4) and signals or abstract Unix sockets that leave the
// sandbox (ABI 6) — a second wall behind the empty network namespace.
//
// Landlock is unprivileged and stacks: the pipeline may restrict itself
// further but can never widen these rules. Limits, honestly: Landlock does
// not mediate path resolution (stat, readlink, chdir on a denied directory
// still work), reads through file descriptors opened before the ruleset was
// applied (stdin/stdout/stderr only, here), or UDP/MPTCP (closed by the
// network namespace and seccomp).
//
// Tests: TestHostileReadUnboundPool, TestHostileShadow, TestHostileWritePool,
// TestHostileWriteOutside, TestHostileTCP.

const (
	fsRead = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR
	fsExec = unix.LANDLOCK_ACCESS_FS_EXECUTE
	// fsWrite deliberately lacks EXECUTE (W^X: a pipeline cannot run a
	// binary it wrote), MAKE_CHAR/MAKE_BLOCK (device nodes) and MAKE_SOCK
	// (named Unix sockets are a channel out of the sandbox).
	fsWrite = unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM |
		unix.LANDLOCK_ACCESS_FS_REFER |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE
	// fileOnly are the rights Landlock accepts on a rule for a non-directory.
	fileOnly = unix.LANDLOCK_ACCESS_FS_EXECUTE |
		unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE |
		unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// handledFS returns every filesystem right the given ABI knows: whatever is
// handled and not granted by a rule is denied.
func handledFS(abi int) uint64 {
	h := uint64(1<<13 - 1) // ABI 1: EXECUTE .. MAKE_SYM
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return h
}

func (a Access) bits() uint64 {
	switch a {
	case AccessRead:
		return fsRead
	case AccessReadExec:
		return fsRead | fsExec
	case AccessWrite:
		return fsRead | fsWrite
	case AccessDevRW:
		return unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
			unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	return 0
}

// LandlockABI returns the kernel's Landlock ABI version, or an error when
// Landlock is not built in or disabled at boot.
func LandlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0,
		unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, fmt.Errorf("landlock_create_ruleset(VERSION): %w", errno)
	}
	return int(v), nil
}

// applyLandlock restricts the calling thread (the one that will execve) with
// rules. It needs no_new_privs to be set already.
func applyLandlock(abi int, rules []Rule, connectPorts []int) error {
	if abi < 1 {
		return errors.New("landlock unavailable")
	}
	handled := handledFS(abi)
	attr := unix.LandlockRulesetAttr{Handled_access_fs: handled}
	size := unsafe.Sizeof(uint64(0)) // ABI 1-3: access_fs only
	if abi >= 4 {
		// No bind rule is ever added, and a connect rule only for the
		// ports of Spec.Loopback, so every other TCP bind and connect is
		// denied (TestHostileTCP sees EACCES before the empty netns is
		// consulted; TestLoopbackServesOnlyItsPort).
		attr.Handled_access_net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size = 2 * unsafe.Sizeof(uint64(0))
	}
	if abi >= 6 {
		// Blocks signalling processes outside the domain and connecting to
		// abstract Unix sockets of the host (seccomp also denies AF_UNIX).
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size = 3 * unsafe.Sizeof(uint64(0)) // the quiet_* fields of later ABIs stay unsent
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET,
		uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	rfd := int(fd)
	defer unix.Close(rfd)

	for _, r := range rules {
		if err := addLandlockRule(rfd, r, handled); err != nil {
			return err
		}
	}
	if abi >= 4 {
		for _, port := range connectPorts {
			np := landlockNetPortAttr{AllowedAccess: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, Port: uint64(port)}
			if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rfd),
				landlockRuleNetPort, uintptr(unsafe.Pointer(&np)), 0, 0, 0); errno != 0 {
				return fmt.Errorf("landlock_add_rule port %d: %w", port, errno)
			}
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rfd), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// landlockNetPortAttr is the kernel's struct landlock_net_port_attr
// (x/sys does not define it); landlockRuleNetPort is LANDLOCK_RULE_NET_PORT.
type landlockNetPortAttr struct {
	AllowedAccess uint64
	Port          uint64
}

const landlockRuleNetPort = 2

func addLandlockRule(rfd int, r Rule, handled uint64) error {
	pfd, err := unix.Open(r.Path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if r.Optional && errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("landlock rule %q: %w", r.Path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return fmt.Errorf("landlock rule %q: %w", r.Path, err)
	}
	allowed := r.Access.bits() & handled
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		allowed &= fileOnly
	}
	if allowed == 0 {
		return nil
	}
	pb := unix.LandlockPathBeneathAttr{Allowed_access: allowed, Parent_fd: int32(pfd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rfd),
		unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&pb)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_add_rule %q: %w", r.Path, errno)
	}
	return nil
}

// SystemRules are granted to every pipeline: what is needed to run ordinary
// programs, and nothing that holds secrets. They name the paths mounts.go
// binds into the run's root; /etc is not granted wholesale — only the files
// the dynamic loader and libc read — so /etc/shadow, SSH host keys and
// Airlock's own configuration stay unreadable (TestHostileShadow). /proc and
// /sys are neither mounted nor granted.
func SystemRules() []Rule {
	var rules []Rule
	for _, d := range systemDirs {
		rules = append(rules, Rule{Path: d, Access: AccessReadExec, Optional: true})
	}
	for _, f := range systemFiles {
		rules = append(rules, Rule{Path: f, Access: AccessRead, Optional: true})
	}
	for i, f := range devFiles {
		a := AccessRead
		if i < 2 {
			a = AccessDevRW // /dev/null and /dev/full
		}
		rules = append(rules, Rule{Path: f, Access: a, Optional: true})
	}
	return rules
}
