// Package gobuild builds a binary for a test that runs one as its own
// process (the airlock binary, a probe upstream). Invariant: a package
// that does not build fails the test with the compiler's output, and the
// binary is static (CGO_ENABLED=0) unless the caller's env says otherwise.
package gobuild

import (
	"os"
	"os/exec"
	"testing"
)

// Build runs `go build -o out pkg` from the test's directory, with
// CGO_ENABLED=0 and then env appended to the environment (a later entry
// wins, so env may set CGO_ENABLED=1).
func Build(t testing.TB, out, pkg string, env ...string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -o %s %s (%v): %v\n%s", out, pkg, env, err, b)
	}
}
