//go:build linux && amd64

package confine

import "golang.org/x/sys/unix"

const (
	auditArch     = unix.AUDIT_ARCH_X86_64
	x32Bit        = 0x40000000 // __X32_SYSCALL_BIT
	cloneFlagsArg = 0
)

// archDenied are amd64-only syscalls: raw port I/O, LDT manipulation (used
// in 16/32-bit code tricks and past exploits) and long-obsolete calls.
var archDenied = []uint32{
	unix.SYS_IOPL, unix.SYS_IOPERM, unix.SYS_MODIFY_LDT, unix.SYS_USELIB,
	unix.SYS_CREATE_MODULE, unix.SYS_GET_KERNEL_SYMS, unix.SYS_QUERY_MODULE,
	unix.SYS_NFSSERVCTL, unix.SYS__SYSCTL, unix.SYS_VSERVER,
}
