//go:build linux && !amd64 && !arm64

package confine

// No filter is written for this architecture: Probe reports seccomp as
// unavailable and New refuses to build a sandbox.
const (
	auditArch     = 0
	x32Bit        = 0
	cloneFlagsArg = 0
)

var archDenied = []uint32{}
