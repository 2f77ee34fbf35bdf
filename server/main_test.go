package server

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/store/pgtest"
)

// trampoline is a cgo-free build of the sandbox trampoline: the race-enabled
// test binary has cgo and cannot be re-executed as one. binDir holds it,
// and the airlock binary once a test asks for it (airlockBinary).
var trampoline, binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "airlock-server-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Chmod(dir, 0o755)
	binDir, trampoline = dir, filepath.Join(dir, "trampoline")
	cmd := exec.Command("go", "build", "-o", trampoline, "../internal/execution/sandbox/internal/trampolinecmd")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the trampoline: %v\n%s", err, out)
		os.Exit(1)
	}
	code := pgtest.Run(m) // the scale-out tests' PostgreSQL, started on first use
	os.RemoveAll(dir)
	os.Exit(code)
}
