//go:build linux && amd64

package confine

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// evalBPF interprets the subset of classic BPF the filter uses against a
// struct seccomp_data, so every verdict can be checked without a kernel.
func evalBPF(t *testing.T, prog []unix.SockFilter, nr, arch uint32, args [6]uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	le := binary.LittleEndian
	le.PutUint32(data[0:], nr)
	le.PutUint32(data[4:], arch)
	for i, a := range args {
		le.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case unix.BPF_LD | unix.BPF_W | unix.BPF_ABS:
			acc = le.Uint32(data[in.K:])
		case unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K:
			pc += jmp(acc == in.K, in)
		case unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K:
			pc += jmp(acc >= in.K, in)
		case unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K:
			pc += jmp(acc&in.K != 0, in)
		case unix.BPF_RET | unix.BPF_K:
			return in.K
		default:
			t.Fatalf("unexpected opcode %#x at %d", in.Code, pc)
		}
	}
	t.Fatal("fell off the end of the program")
	return 0
}

func jmp(cond bool, in unix.SockFilter) int {
	if cond {
		return int(in.Jt)
	}
	return int(in.Jf)
}

func TestSeccompVerdicts(t *testing.T) {
	prog, err := buildSeccompFilter()
	if err != nil {
		t.Fatal(err)
	}
	if len(prog) > 4096 {
		t.Fatalf("program too long: %d", len(prog))
	}
	const (
		allow = seccompRetAllow
		eperm = seccompRetErrno | uint32(unix.EPERM)
		nosys = seccompRetErrno | uint32(unix.ENOSYS)
		kill  = seccompRetKillProcess
	)
	x86 := uint32(unix.AUDIT_ARCH_X86_64)
	tests := []struct {
		name string
		nr   uint32
		arch uint32
		args [6]uint64
		want uint32
	}{
		{"read allowed", unix.SYS_READ, x86, [6]uint64{}, allow},
		{"execve allowed", unix.SYS_EXECVE, x86, [6]uint64{}, allow},
		{"i386 arch killed (int 0x80)", 20, unix.AUDIT_ARCH_I386, [6]uint64{}, kill},
		{"x32 syscall killed", 0x40000000 | unix.SYS_SOCKET, x86, [6]uint64{}, kill},
		{"AF_INET tcp allowed", unix.SYS_SOCKET, x86, [6]uint64{unix.AF_INET, unix.SOCK_STREAM, 0}, allow},
		{"AF_INET6 udp allowed", unix.SYS_SOCKET, x86, [6]uint64{unix.AF_INET6, unix.SOCK_DGRAM, 0}, allow},
		{"AF_INET mptcp denied", unix.SYS_SOCKET, x86, [6]uint64{unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP}, eperm},
		{"AF_UNIX denied", unix.SYS_SOCKET, x86, [6]uint64{unix.AF_UNIX, unix.SOCK_STREAM, 0}, eperm},
		{"AF_NETLINK denied", unix.SYS_SOCKET, x86, [6]uint64{unix.AF_NETLINK, unix.SOCK_RAW, 0}, eperm},
		{"AF_VSOCK denied", unix.SYS_SOCKET, x86, [6]uint64{unix.AF_VSOCK, unix.SOCK_STREAM, 0}, eperm},
		{"AF_PACKET denied", unix.SYS_SOCKET, x86, [6]uint64{unix.AF_PACKET, unix.SOCK_RAW, 0}, eperm},
		{"socketpair denied", unix.SYS_SOCKETPAIR, x86, [6]uint64{unix.AF_UNIX}, eperm},
		{"fork-like clone allowed", unix.SYS_CLONE, x86, [6]uint64{uint64(unix.SIGCHLD)}, allow},
		{"thread clone allowed", unix.SYS_CLONE, x86, [6]uint64{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND}, allow},
		{"clone NEWUSER denied", unix.SYS_CLONE, x86, [6]uint64{unix.CLONE_NEWUSER | uint64(unix.SIGCHLD)}, eperm},
		{"clone NEWNET denied", unix.SYS_CLONE, x86, [6]uint64{unix.CLONE_NEWNET}, eperm},
		{"clone3 ENOSYS", unix.SYS_CLONE3, x86, [6]uint64{}, nosys},
		{"ioctl TIOCSTI denied", unix.SYS_IOCTL, x86, [6]uint64{0, unix.TIOCSTI}, eperm},
		{"ioctl TCGETS allowed", unix.SYS_IOCTL, x86, [6]uint64{0, unix.TCGETS}, allow},
		{"io_uring_setup denied", unix.SYS_IO_URING_SETUP, x86, [6]uint64{}, eperm},
		{"ptrace denied", unix.SYS_PTRACE, x86, [6]uint64{}, eperm},
		{"bpf denied", unix.SYS_BPF, x86, [6]uint64{}, eperm},
		{"mount denied", unix.SYS_MOUNT, x86, [6]uint64{}, eperm},
		{"unshare denied", unix.SYS_UNSHARE, x86, [6]uint64{}, eperm},
		{"setns denied", unix.SYS_SETNS, x86, [6]uint64{}, eperm},
		{"keyctl denied", unix.SYS_KEYCTL, x86, [6]uint64{}, eperm},
		{"perf_event_open denied", unix.SYS_PERF_EVENT_OPEN, x86, [6]uint64{}, eperm},
		{"kexec_load denied", unix.SYS_KEXEC_LOAD, x86, [6]uint64{}, eperm},
		{"modify_ldt denied", unix.SYS_MODIFY_LDT, x86, [6]uint64{}, eperm},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := evalBPF(t, prog, tt.nr, tt.arch, tt.args); got != tt.want {
				t.Fatalf("verdict %#x, want %#x", got, tt.want)
			}
		})
	}
	// Every denied syscall in the list really is denied.
	for _, nr := range append(append([]uint32(nil), deniedSyscalls...), archDenied...) {
		if got := evalBPF(t, prog, nr, x86, [6]uint64{}); got != eperm {
			t.Errorf("syscall %d: verdict %#x, want EPERM", nr, got)
		}
	}
}
