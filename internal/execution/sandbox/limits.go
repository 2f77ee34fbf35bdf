package sandbox

import (
	"cmp"
	"fmt"
	"time"
)

// validLimits refuses negative limits and fills zero ones from DefaultLimits.
func validLimits(l Limits) (Limits, error) {
	if l.Wall < 0 || l.CPU < 0 || l.MemoryBytes < 0 || l.Procs < 0 ||
		l.OutputBytes < 0 || l.FileSizeBytes < 0 || l.OpenFiles < 0 || l.DiskBytes < 0 {
		return l, fmt.Errorf("%w: negative limit in %+v", ErrInvalidSpec, l)
	}
	return effectiveLimits(l), nil
}

// effectiveLimits applies defaults and floors. The floors keep the
// trampoline itself (a small Go program, in the run's cgroup before it
// execs the pipeline) able to start.
func effectiveLimits(l Limits) Limits {
	d := DefaultLimits
	// cmp.Or: a zero limit takes the default.
	l.Wall = cmp.Or(l.Wall, d.Wall)
	l.CPU = cmp.Or(l.CPU, min(d.CPU, l.Wall))
	l.MemoryBytes = max(cmp.Or(l.MemoryBytes, d.MemoryBytes), minMemoryBytes)
	l.Procs = max(cmp.Or(l.Procs, d.Procs), minProcs)
	l.OutputBytes = cmp.Or(l.OutputBytes, d.OutputBytes)
	l.FileSizeBytes = cmp.Or(l.FileSizeBytes, d.FileSizeBytes)
	l.OpenFiles = max(cmp.Or(l.OpenFiles, d.OpenFiles), minOpenFiles)
	l.DiskBytes = max(cmp.Or(l.DiskBytes, d.DiskBytes), minDiskBytes)
	return l
}

const (
	minMemoryBytes = 16 << 20
	minOpenFiles   = 16
	minDiskBytes   = 64 << 10 // a few pages: the directories themselves
)

// cpuSeconds rounds a CPU limit up to RLIMIT_CPU's whole seconds.
func cpuSeconds(d time.Duration) uint64 {
	return uint64(max((d+time.Second-1)/time.Second, 1))
}
