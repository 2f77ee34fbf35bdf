//go:build unix

package sources

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// TestReadFIFO: a FIFO planted under a listed name is refused at once. A
// blocking open would hang here until a writer appeared.
func TestReadFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	writeSums(t, filepath.Join(dir, DefaultManifestName), map[string]string{"pipe": "x"})
	reg, err := OpenRegistry([]PoolConfig{{ID: "p", Path: dir}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	c := bindAll(t, reg)
	done := make(chan error, 1)
	go func() { _, err := c.Read("p", "pipe", 0, 0); done <- err }()
	select {
	case err := <-done:
		if codeOf(err) != violation.IntegrityFailure {
			t.Fatalf("fifo: %v, want INTEGRITY_FAILURE", err)
		}
	case <-time.After(time.Minute): // a hang guard: a blocked read never returns
		t.Fatal("Read of a FIFO blocked")
	}
	rep := reg.Verify()
	if len(rep) != 1 || rep[0].OK || rep[0].Problems[0].Kind != ProblemUnreadable {
		t.Fatalf("Verify: %+v", rep)
	}
	// A FIFO as the manifest itself must not hang OpenRegistry either.
	dir2 := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir2, DefaultManifestName), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenRegistry([]PoolConfig{{ID: "q", Path: dir2}}, nil); err == nil {
		t.Fatal("FIFO manifest accepted")
	}
}
