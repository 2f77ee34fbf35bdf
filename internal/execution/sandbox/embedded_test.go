//go:build linux

package sandbox_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
	"golang.org/x/sys/unix"
)

// notSelf stands in for os.Executable where the test binary (cgo, -race)
// must never become the trampoline.
func notSelf() (string, error) { return "", errors.New("the test binary cannot be the trampoline") }

// TestEmbeddedTrampolineRuns: with a trampoline embedded (what `make
// build` links in) and no TrampolinePath, a Sandbox starts that binary
// from its memfd — the self-test, a confined run and the spare all run it —
// and never the server binary.
func TestEmbeddedTrampolineRuns(t *testing.T) {
	newSandbox(t) // fixtures built, root and the mechanisms present
	b, err := os.ReadFile(trampolinePath)
	if err != nil {
		t.Fatal(err)
	}
	defer sandbox.UseEmbedded(b, notSelf)()
	s, err := sandbox.New(&sandbox.Options{Spare: true})
	if err != nil {
		t.Fatalf("New with an embedded trampoline: %v", err)
	}
	defer s.Close()
	if p := s.TrampolineOf(); !strings.HasPrefix(p, "/proc/self/fd/") {
		t.Errorf("trampoline %q, want the memfd", p)
	}
	if m, _ := s.Report().Get(sandbox.MechSelfTest); !m.Active || !strings.Contains(m.Detail, "(embedded trampoline)") {
		t.Errorf("self-test %+v, want active through the embedded trampoline", m)
	}
	res, err := s.Run(context.Background(), sandbox.Spec{Argv: []string{hostilePath, "ids"}, ReadOnly: []string{fixtureDir}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "uid=65534 euid=65534 gid=65534 groups=[] pid=1 host=airlock"; !strings.Contains(string(res.Stdout), want) {
		t.Errorf("stdout %q, want %q", res.Stdout, want)
	}
	pid := s.SpareSettled()
	if pid == 0 {
		t.Fatal("no spare after the run")
	}
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil || !strings.HasPrefix(exe, "/memfd:airlock-trampoline") {
		t.Errorf("spare %d runs %q (%v), want the memfd", pid, exe, err)
	}
}

// TestEmbeddedTrampolineFallsBack: an embedded trampoline that cannot run
// (here not a program at all; on a host with vm.memfd_noexec = 2, any)
// fails its self-test, and the Sandbox falls back to the binary itself
// rather than failing or running unconfined.
func TestEmbeddedTrampolineFallsBack(t *testing.T) {
	newSandbox(t)
	defer sandbox.UseEmbedded([]byte("not a program\n"), func() (string, error) { return trampolinePath, nil })()
	s, err := sandbox.New(nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	defer s.Close()
	if p := s.TrampolineOf(); p != trampolinePath {
		t.Errorf("trampoline %q, want the fallback %q", p, trampolinePath)
	}
	if m, _ := s.Report().Get(sandbox.MechSelfTest); !m.Active || strings.Contains(m.Detail, "(embedded trampoline)") ||
		!strings.Contains(m.Detail, "the embedded trampoline failed") {
		t.Errorf("self-test %+v, want active through the fallback, which it names", m)
	}
}

// TestEmbeddedTrampolineSealed: the memfd a Sandbox executes cannot be
// written, truncated, grown or unsealed once made — the attack is a
// process of the server's user rewriting the trampoline through
// /proc/PID/fd between two runs, so the next run is confined by its code.
func TestEmbeddedTrampolineSealed(t *testing.T) {
	want := []byte("#!/bin/false\n" + strings.Repeat("x", 3<<20))
	f, err := sandbox.SealedMemfd("sealed-test", want, false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seals, err := unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []int{unix.F_SEAL_SEAL, unix.F_SEAL_SHRINK, unix.F_SEAL_GROW, unix.F_SEAL_WRITE} {
		if seals&s == 0 {
			t.Errorf("seals %#x lack %#x", seals, s)
		}
	}
	path := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
		_, werr := w.WriteAt([]byte("evil"), 0)
		w.Close()
		if !errors.Is(werr, syscall.EPERM) {
			t.Errorf("write through %s: %v, want EPERM", path, werr)
		}
	}
	if err := os.Truncate(path, 1); !errors.Is(err, syscall.EPERM) {
		t.Errorf("truncate: %v, want EPERM", err)
	}
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, 0); !errors.Is(err, syscall.EPERM) {
		t.Errorf("adding seals after F_SEAL_SEAL: %v, want EPERM", err)
	}
	got, err := io.ReadAll(io.NewSectionReader(f, 0, int64(len(want))+1))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("memfd holds %d bytes (%v), want the %d given", len(got), err, len(want))
	}
}

// TestSealedMemfdDropsOnlyFilePages: giving back the pages of data mapped
// from a file (the binary's embedded trampoline) as it is copied loses
// nothing: the memfd holds every byte, and the mapping reads the same
// bytes again afterwards (re-read from the file).
func TestSealedMemfdDropsOnlyFilePages(t *testing.T) {
	want := make([]byte, 3<<20+123)
	if _, err := rand.Read(want); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "binary")
	if err := os.WriteFile(file, want, 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	mapped, err := unix.Mmap(int(src.Fd()), 0, len(want), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mapped)
	f, err := sandbox.SealedMemfd("drop-test", mapped[5:], true) // an unaligned start, as embedded data may be
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := io.ReadAll(io.NewSectionReader(f, 0, int64(len(want))))
	if err != nil || !bytes.Equal(got, want[5:]) {
		t.Errorf("memfd differs from the mapped data (%v)", err)
	}
	if !bytes.Equal(mapped, want) {
		t.Error("the mapping reads other bytes after its pages were given back")
	}
}

// TestMemfdAboveChildFDs: the memfd's descriptor is above every one a
// trampoline is started with (stdio and fds 3-5), so /proc/self/fd/N,
// resolved in the child after they are in place, is the memfd there too.
// On fd 5 it was /dev/null in the child (`airlock doctor`), and the
// self-test fell back to the server binary.
func TestMemfdAboveChildFDs(t *testing.T) {
	f, err := sandbox.SealedMemfd("fd-test", []byte("x"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fd := f.Fd(); fd < 64 {
		t.Errorf("memfd on descriptor %d, want 64 or above", fd)
	}
}
