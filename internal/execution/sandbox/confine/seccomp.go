//go:build linux

package confine

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The seccomp filter is a deny list over the kernel's attack surface that a
// data pipeline never needs. It is not the primary wall (that is the
// namespaces, Landlock and the uid drop); it removes the interfaces whose
// bugs have historically turned "code running as nobody" into "root on the
// host", and the socket families that could reach something outside the
// empty network namespace.
//
// Structure of the program, in order:
//  1. architecture check: anything but the native arch (for example a
//     64-bit process issuing `int 0x80`, or a 32-bit binary) kills the
//     process; otherwise 32-bit syscall numbers would be matched against the
//     64-bit table and bypass every rule (TestHostileInt80, TestHostile32BitELF);
//  2. on amd64, x32 syscall numbers (bit 30) kill the process, same reason;
//  3. socket(2): only AF_INET and AF_INET6, and never IPPROTO_MPTCP (Landlock
//     ABI 7 does not mediate MPTCP); socketpair(2) is denied, so no AF_UNIX in
//     any form (TestHostileUnixSocket, TestHostileMPTCP);
//  4. clone(2) with any CLONE_NEW* flag is denied, clone3 gets ENOSYS so libc
//     falls back to clone (its flags live in memory BPF cannot read);
//  5. ioctl TIOCSTI/TIOCLINUX (terminal input injection) is denied;
//  6. a list of syscalls returns EPERM (deniedSyscalls below).
//
// Denials return EPERM rather than killing, so a pipeline sees an ordinary
// error and its stderr says what was refused; only the arch/x32 checks kill
// (SIGSYS), since nothing legitimate hits them.

// seccompRetErrno etc. mirror <linux/seccomp.h>.
const (
	seccompRetKillProcess = unix.SECCOMP_RET_KILL_PROCESS
	seccompRetErrno       = unix.SECCOMP_RET_ERRNO
	seccompRetAllow       = unix.SECCOMP_RET_ALLOW

	offNr   = 0 // struct seccomp_data.nr
	offArch = 4 // .arch
	offArg0 = 16
	// Arguments are 64-bit; on the little-endian arches supported here the
	// low 32 bits sit at the argument's offset.
	argSize = 8

	cloneNewMask = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS |
		unix.CLONE_NEWIPC | unix.CLONE_NEWUSER | unix.CLONE_NEWPID |
		unix.CLONE_NEWNET | unix.CLONE_NEWTIME
)

// deniedSyscalls is the common (arch-independent) part of the deny list;
// archDenied adds the arch-specific ones.
var deniedSyscalls = []uint32{
	// Namespaces and mounts: the sandbox's shape must not change from inside.
	unix.SYS_UNSHARE, unix.SYS_SETNS, unix.SYS_MOUNT, unix.SYS_UMOUNT2,
	unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT, unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE,
	unix.SYS_OPEN_TREE_ATTR, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT,
	unix.SYS_FSPICK, unix.SYS_MOUNT_SETATTR,
	// Kernel attack surface with a long CVE history.
	unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER, unix.SYS_IO_URING_REGISTER,
	unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_USERFAULTFD,
	unix.SYS_KEYCTL, unix.SYS_ADD_KEY, unix.SYS_REQUEST_KEY,
	// Looking into or moving other processes' memory and files.
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV,
	unix.SYS_PROCESS_MADVISE, unix.SYS_PIDFD_GETFD, unix.SYS_KCMP,
	unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_OPEN_BY_HANDLE_AT,
	// Whole-machine state.
	unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_REBOOT,
	unix.SYS_INIT_MODULE, unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE,
	unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT, unix.SYS_QUOTACTL,
	unix.SYS_QUOTACTL_FD, unix.SYS_SYSLOG, unix.SYS_VHANGUP,
	unix.SYS_SETTIMEOFDAY, unix.SYS_CLOCK_SETTIME, unix.SYS_CLOCK_ADJTIME,
	unix.SYS_ADJTIMEX, unix.SYS_SETHOSTNAME, unix.SYS_SETDOMAINNAME,
	unix.SYS_FANOTIFY_INIT, unix.SYS_LOOKUP_DCOOKIE,
	unix.SYS_SOCKETPAIR,
}

// bpfProg is a tiny assembler: instructions with symbolic jump targets,
// resolved to the 8-bit relative offsets classic BPF needs.
type bpfProg struct {
	ins    []unix.SockFilter
	labels map[string]int
	fixups []fixup
}

type fixup struct {
	at     int
	jt, jf string
}

func (p *bpfProg) stmt(code uint16, k uint32) {
	p.ins = append(p.ins, unix.SockFilter{Code: code, K: k})
}

// jump appends a conditional jump; "" as a target means "next instruction".
func (p *bpfProg) jump(code uint16, k uint32, jt, jf string) {
	p.fixups = append(p.fixups, fixup{at: len(p.ins), jt: jt, jf: jf})
	p.ins = append(p.ins, unix.SockFilter{Code: code, K: k})
}

func (p *bpfProg) label(name string) {
	if p.labels == nil {
		p.labels = map[string]int{}
	}
	p.labels[name] = len(p.ins)
}

func (p *bpfProg) ret(k uint32) { p.stmt(unix.BPF_RET|unix.BPF_K, k) }

func (p *bpfProg) loadAbs(off uint32) { p.stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }

func (p *bpfProg) resolve() ([]unix.SockFilter, error) {
	rel := func(at int, name string) (uint8, error) {
		if name == "" {
			return 0, nil
		}
		to, ok := p.labels[name]
		if !ok {
			return 0, fmt.Errorf("bpf: unknown label %q", name)
		}
		d := to - at - 1
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("bpf: jump to %q out of range (%d)", name, d)
		}
		return uint8(d), nil
	}
	for _, f := range p.fixups {
		jt, err := rel(f.at, f.jt)
		if err != nil {
			return nil, err
		}
		jf, err := rel(f.at, f.jf)
		if err != nil {
			return nil, err
		}
		p.ins[f.at].Jt, p.ins[f.at].Jf = jt, jf
	}
	return p.ins, nil
}

// buildSeccompFilter returns the filter for the native architecture.
func buildSeccompFilter() ([]unix.SockFilter, error) {
	if auditArch == 0 {
		return nil, errors.New("seccomp: unsupported architecture")
	}
	const (
		jeq  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge  = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
	)
	p := &bpfProg{}
	p.loadAbs(offArch)
	p.jump(jeq, auditArch, "", "kill")
	p.loadAbs(offNr)
	if x32Bit != 0 {
		p.jump(jge, x32Bit, "kill", "")
	}
	p.jump(jeq, unix.SYS_SOCKET, "socket", "")
	p.jump(jeq, unix.SYS_CLONE, "clone", "")
	p.jump(jeq, unix.SYS_CLONE3, "enosys", "")
	p.jump(jeq, unix.SYS_IOCTL, "ioctl", "")
	for _, nr := range append(append([]uint32(nil), deniedSyscalls...), archDenied...) {
		p.jump(jeq, nr, "deny", "")
	}
	p.ret(seccompRetAllow)

	p.label("socket")
	p.loadAbs(offArg0)
	p.jump(jeq, unix.AF_INET, "sockproto", "")
	p.jump(jeq, unix.AF_INET6, "sockproto", "deny")
	p.label("sockproto")
	p.loadAbs(offArg0 + 2*argSize)
	p.jump(jeq, unix.IPPROTO_MPTCP, "deny", "")
	p.ret(seccompRetAllow)

	p.label("clone")
	p.loadAbs(offArg0 + cloneFlagsArg*argSize)
	p.jump(jset, cloneNewMask, "deny", "")
	p.ret(seccompRetAllow)

	p.label("ioctl")
	p.loadAbs(offArg0 + 1*argSize)
	p.jump(jeq, unix.TIOCSTI, "deny", "")
	p.jump(jeq, unix.TIOCLINUX, "deny", "")
	p.ret(seccompRetAllow)

	p.label("deny")
	p.ret(seccompRetErrno | uint32(unix.EPERM))
	p.label("enosys")
	p.ret(seccompRetErrno | uint32(unix.ENOSYS))
	p.label("kill")
	p.ret(seccompRetKillProcess)
	return p.resolve()
}

// installSeccomp loads the filter on the calling thread (the one that will
// execve; the filter is inherited across execve and fork). no_new_privs must
// already be set.
func installSeccomp() error {
	ins, err := buildSeccompFilter()
	if err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(ins)), Filter: &ins[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0,
		uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("seccomp(SET_MODE_FILTER): %w", errno)
	}
	return nil
}

// SeccompAvailable reports whether filter mode seccomp can be used.
func SeccompAvailable() error {
	if auditArch == 0 {
		return errors.New("no seccomp filter for this architecture")
	}
	// SECCOMP_GET_ACTION_AVAIL for KILL_PROCESS: proves the seccomp syscall
	// and the action we rely on both exist.
	action := uint32(seccompRetKillProcess)
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, 2 /* SECCOMP_GET_ACTION_AVAIL */, 0,
		uintptr(unsafe.Pointer(&action))); errno != 0 {
		return fmt.Errorf("seccomp(GET_ACTION_AVAIL): %w", errno)
	}
	return nil
}

// ArchName names the architecture the filter admits, for the report.
func ArchName() string {
	switch auditArch {
	case unix.AUDIT_ARCH_X86_64:
		return "x86_64; i386 and x32 calls kill"
	case unix.AUDIT_ARCH_AARCH64:
		return "aarch64; aarch32 calls kill"
	}
	return "unsupported arch"
}
