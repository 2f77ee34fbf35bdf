package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
	"github.com/airlock-dev/airlock/internal/testkit/gobuild"
)

// TestTrampolineStartsBeforeHeavyInit: re-executed as the sandbox
// trampoline, the airlock binary confines and execs the pipeline from
// package sandbox's init, before the packages whose initialisers cost
// milliseconds on every pipeline run (issue 11: the JSON Schema library
// compiles its meta-schemas at init; before this, the trampoline took
// 10-16 ms to start against ~3 ms now). Read from the runtime's own init
// trace: no package after sandbox's turn may have initialised.
func TestTrampolineStartsBeforeHeavyInit(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "airlock")
	gobuild.Build(t, bin, ".")
	// Without the parent's pipes the trampoline fails at its first stage
	// and exits: enough to see which packages initialised before it ran.
	cmd := exec.Command(bin, sandbox.TrampolineArg)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, _ := cmd.CombinedOutput()
	trace := string(out)
	// The trampoline runs inside sandbox's init, so that package's own
	// line never prints; the packages before it do.
	if !strings.Contains(trace, "init golang.org/x/sys/unix ") {
		t.Fatalf("no init trace from the runtime:\n%s", trace)
	}
	for _, heavy := range []string{"github.com/santhosh-tekuri/jsonschema/v6", "github.com/airlock-dev/airlock/internal/config", "github.com/prometheus/client_golang/prometheus"} {
		if strings.Contains(trace, "init "+heavy+" ") {
			t.Errorf("%s initialised before the trampoline ran", heavy)
		}
	}
}
