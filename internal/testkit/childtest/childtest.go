// Package childtest starts this test binary again as a child process, for
// tests that need a second process: one holding a store's lock, one
// appending beside the parent or killed mid-write, one running a
// conformance suite against a store with a planted bug. The child is
// selected by an environment variable the parent sets and the child's test
// (or TestMain hook) reads; nothing else of the parent's run is passed on.
//
// It is test code (internal/testkit): TestTestPackagesNotShipped keeps it
// out of the binary, and TestOnlySandboxStartsProcesses names it among the
// few test helpers that may import os/exec.
package childtest

import (
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Command is this test binary running only the tests run matches ("^$"
// for none, when a TestMain hook does the child's work), once, with env
// ("NAME=value") added to this process's environment.
func Command(run string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run="+run, "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// Mutant is a store with one bug, and the conformance check that must
// catch it.
type Mutant[S any] struct {
	Store  func() S
	Caught string
}

// BrokenStoreChild is the test a package running [CatchMutants] declares:
// it runs the conformance suite against the stores of [ChildMutant].
const BrokenStoreChild = "TestBrokenStoreChild"

// CatchMutants runs the package's TestBrokenStoreChild in a child process
// once per mutant, with env naming it, and expects the mutant's Caught
// check to fail there: a suite that passes a broken store would vouch for
// a broken real one.
func CatchMutants[S any](t *testing.T, env string, mutants map[string]Mutant[S]) {
	if testing.Short() {
		t.Skip("starts a test process per mutant")
	}
	for _, name := range slices.Sorted(maps.Keys(mutants)) {
		t.Run(name, func(t *testing.T) {
			cmd := Command("^"+BrokenStoreChild+"$", env+"="+name)
			cmd.Args = append(cmd.Args, "-test.v")
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the conformance suite passed a store with the bug %q", name)
			}
			caught := mutants[name].Caught
			if !strings.Contains(string(out), "--- FAIL: "+BrokenStoreChild+"/"+caught+" ") {
				t.Errorf("%s was not caught by %s:\n%s", name, caught, out)
			}
		})
	}
}

// ChildMutant is, in the child CatchMutants starts, the mutant env names
// (the test builds its stores with its Store); in an ordinary run it skips
// the test.
func ChildMutant[S any](t *testing.T, env string, mutants map[string]Mutant[S]) Mutant[S] {
	t.Helper()
	name := os.Getenv(env)
	if name == "" {
		t.Skip("run by TestConformanceCatchesBrokenStores")
	}
	m, ok := mutants[name]
	if !ok {
		t.Fatalf("%s=%q names no mutant", env, name)
	}
	return m
}
