// Package golden compares what a test produced with a committed file, and
// rewrites the file instead when the test binary runs with -update (as
// `make schemas` does). Its invariant: without -update nothing is written,
// so a golden file changes only when someone asks for it and the change
// shows up in review.
//
// It is test code (internal/testkit): TestTestPackagesNotShipped keeps it
// out of the binary.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files (testdata, schemas) from the current output")

// Update reports whether the test binary runs with -update, for a test
// that writes its golden files itself.
func Update() bool { return *update }

// Check compares got with the file at path. Under -update it writes got
// there instead (creating the directory) and checks nothing. Otherwise a
// missing file ends the test and a different one fails it, both saying
// how to regenerate: fix, e.g. "make schemas".
func Check(t testing.TB, path string, got []byte, fix string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (%s to create it)", err, fix)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale (%s to accept):\n--- got\n%s\n--- want\n%s", path, fix, got, want)
	}
}
