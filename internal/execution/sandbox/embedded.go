//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"unsafe"

	"github.com/airlock-dev/airlock/internal/execution/sandbox/trampolinebin"
	"golang.org/x/sys/unix"
)

// The trampoline a Sandbox starts when Options.TrampolinePath is empty
// (issue 27): the minimal trampoline binary `make build` embeds (package
// trampolinebin), run from a sealed memfd, else the server binary itself.
// A spare then reaches the trampoline's code in ~7–11 ms of CPU instead of
// ~18–22, which is what a pipeline run that finds no spare ready waits for.
//
// The memfd is sealed against writes, growth, shrinking and further
// sealing before anything executes it, so no one — not a pipeline, not
// another process of the same user holding /proc/PID/fd — can swap the
// code that confines a run; it is executed through /proc/self/fd/N,
// which each trampoline's execve resolves in its own (forked) descriptor
// table before close-on-exec closes it there.

// embeddedBinary is where the embedded trampoline comes from; tests swap
// it (export_test.go).
var embeddedBinary = trampolinebin.Bytes

// selfExecutable is the fallback trampoline: this binary. Tests swap it.
var selfExecutable = os.Executable

// embedded is the process's one memfd of the embedded trampoline, made on
// first use and kept open (and referenced) for the process's life.
var embedded struct {
	sync.Mutex
	file *os.File
}

// embeddedTrampoline returns the path that executes the embedded
// trampoline, "" when this binary carries none.
func embeddedTrampoline() (string, error) {
	b := embeddedBinary()
	if len(b) == 0 {
		return "", nil
	}
	embedded.Lock()
	defer embedded.Unlock()
	if embedded.file == nil {
		f, err := sealedMemfd("airlock-trampoline", b, true)
		if err != nil {
			return "", err
		}
		embedded.file = f
	}
	return fmt.Sprintf("/proc/self/fd/%d", embedded.file.Fd()), nil
}

// defaultTrampoline picks the trampoline for Options.TrampolinePath == "":
// the embedded one when this binary carries it and it can be made,
// otherwise this binary.
func defaultTrampoline(log *slog.Logger) (path string, isEmbedded bool, err error) {
	p, err := embeddedTrampoline()
	switch {
	case err != nil:
		log.Warn("sandbox: the embedded trampoline cannot be used; the server binary re-executes itself", "err", err)
	case p != "":
		return p, true, nil
	}
	return defaultTrampolineSelf()
}

// defaultTrampolineSelf is the fallback: this binary re-executes itself.
func defaultTrampolineSelf() (path string, isEmbedded bool, err error) {
	exe, err := selfExecutable()
	if err != nil {
		return "", false, &UnavailableError{Reason: "locating own executable: " + err.Error()}
	}
	return exe, false, nil
}

// memfdMinFD is the lowest descriptor the embedded trampoline's memfd may
// have: well above the 6 a trampoline is started with (TestMemfdAboveChildFDs).
const memfdMinFD = 64

// sealedMemfd returns a memfd holding b, executable and sealed. With
// dropPages, each written span of b is given back to the kernel as it is
// copied: b is then the binary's own read-only data, which the kernel
// re-reads from the file if it is ever touched again, and copying it does
// not raise the server's peak resident memory by its size (issue 27
// measures the peak). Never with memory of the Go heap.
func sealedMemfd(name string, b []byte, dropPages bool) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if errors.Is(err, unix.EINVAL) {
		// Before Linux 6.3 there is no MFD_EXEC: every memfd may be executed.
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("memfd for the trampoline: %w", err)
	}
	// Above every descriptor a trampoline is handed (spawn: stdio and
	// ExtraFiles, 0-5): /proc/self/fd/N is resolved in the child after
	// they are in place, and a low N named /dev/null there (airlock
	// doctor, with few files open, ran its self-test on fd 5).
	high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, memfdMinFD)
	unix.Close(fd)
	if err != nil {
		return nil, fmt.Errorf("memfd for the trampoline: %w", err)
	}
	f := os.NewFile(uintptr(high), name)
	if err := writeAll(f, b, dropPages); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing the trampoline's memfd: %w", err)
	}
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		f.Close()
		return nil, fmt.Errorf("sealing the trampoline's memfd: %w", err)
	}
	return f, nil
}

// writeAll writes b to f a MiB at a time, with dropPages advising the
// kernel that the whole pages of each written span are not needed.
func writeAll(f *os.File, b []byte, dropPages bool) error {
	const chunk = 1 << 20
	page := uintptr(os.Getpagesize())
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	for off := 0; off < len(b); off += chunk {
		end := min(off+chunk, len(b))
		if _, err := f.Write(b[off:end]); err != nil {
			return err
		}
		lo := int((base+uintptr(off)+page-1)&^(page-1) - base)
		hi := int((base+uintptr(end))&^(page-1) - base)
		if dropPages && lo < hi {
			_ = unix.Madvise(b[lo:hi], unix.MADV_DONTNEED) // advice only: a refusal costs memory, not correctness
		}
	}
	return nil
}
