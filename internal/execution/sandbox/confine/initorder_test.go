//go:build linux

package confine_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/sandbox/confine"
	"github.com/airlock-dev/airlock/internal/testkit/gobuild"
)

// heavyInitBytes: a package whose initialisation allocates this much is
// work every pipeline run would wait for (internal/policy/poisoning
// allocates ~8 MB, the JSON Schema library ~1.7 MB; the light ones that
// still come first allocate a few KB).
const heavyInitBytes = 1 << 20

// TestTrampolineStartsBeforeHeavyInit builds the airlock binary, starts it
// as a trampoline with an empty spec (it refuses: not PID 1, or the spec)
// under GODEBUG=inittrace=1, and reads which packages were initialised
// before the trampoline ended the process: none of the heavy ones (the
// package invariant). Allocation counts, not clock times: the verdict
// does not depend on the machine's load. Before confine was its own
// package, the sandbox package imported net and runtime/debug, which Go
// initialises only after internal/policy/poisoning, and this test saw
// poisoning's 8 MB.
func TestTrampolineStartsBeforeHeavyInit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the airlock binary")
	}
	bin := filepath.Join(t.TempDir(), "airlock")
	gobuild.Build(t, bin, filepath.Join("..", "..", "..", ".."))
	cmd := exec.Command(bin, confine.TrampolineArg)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != confine.ExitSetupFailed {
		t.Fatalf("trampoline run: %v (want exit %d)\n%s", err, confine.ExitSetupFailed, stderr.String())
	}
	var seen int
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		// init PKG @T ms, C ms clock, B bytes, A allocs
		f := strings.Fields(sc.Text())
		if len(f) < 9 || f[0] != "init" {
			continue
		}
		seen++
		if strings.HasSuffix(f[1], "/internal/policy/poisoning") {
			t.Errorf("%s initialised before the trampoline ran", f[1])
		}
		if b, err := strconv.Atoi(f[7]); err == nil && b >= heavyInitBytes {
			t.Errorf("%s (%d bytes at init) initialised before the trampoline ran", f[1], b)
		}
	}
	if seen == 0 {
		t.Fatalf("no inittrace lines; stderr:\n%s", stderr.String())
	}
}

// TestTrampolineImports is the static half of the invariant: confine
// imports none of the packages that Go initialises only after
// internal/policy/poisoning, and no other airlock package.
func TestTrampolineImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	// net, runtime/debug, os/exec and log/slog are initialised after
	// internal/policy/poisoning; path/filepath after ~50 more light
	// packages (google.golang.org/..., modernc.org/...): the last one of
	// this package's imports to be initialised is x/sys/unix.
	late := map[string]bool{"net": true, "runtime/debug": true, "os/exec": true, "log/slog": true, "crypto/rand": true, "path/filepath": true}
	for _, p := range strings.Fields(string(out)) {
		if late[p] {
			t.Errorf("confine imports %s, which Go initialises after the heavy packages", p)
		}
		if strings.HasPrefix(p, "github.com/airlock-dev/airlock/") && p != "github.com/airlock-dev/airlock/internal/execution/sandbox/confine" {
			t.Errorf("confine imports %s", p)
		}
	}
}
