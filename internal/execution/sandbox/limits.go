package sandbox

import (
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
	if l.Wall == 0 {
		l.Wall = d.Wall
	}
	if l.CPU == 0 {
		l.CPU = min(d.CPU, l.Wall)
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = d.MemoryBytes
	}
	l.MemoryBytes = max(l.MemoryBytes, minMemoryBytes)
	if l.Procs == 0 {
		l.Procs = d.Procs
	}
	l.Procs = max(l.Procs, minProcs)
	if l.OutputBytes == 0 {
		l.OutputBytes = d.OutputBytes
	}
	if l.FileSizeBytes == 0 {
		l.FileSizeBytes = d.FileSizeBytes
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = d.OpenFiles
	}
	l.OpenFiles = max(l.OpenFiles, minOpenFiles)
	if l.DiskBytes == 0 {
		l.DiskBytes = d.DiskBytes
	}
	l.DiskBytes = max(l.DiskBytes, minDiskBytes)
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
