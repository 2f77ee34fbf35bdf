//go:build linux && arm64

package confine

import "golang.org/x/sys/unix"

const (
	auditArch     = unix.AUDIT_ARCH_AARCH64
	x32Bit        = 0 // no x32-style alternate ABI; AArch32 is caught by the arch check
	cloneFlagsArg = 0
)

var archDenied = []uint32{}
