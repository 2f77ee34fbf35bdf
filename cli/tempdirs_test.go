package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDemoLeavesNoTempDir (issue 24 item 10): with a state directory the
// sandbox user cannot traverse (a 0700 test directory, root's home), the
// demo's pools and the runs directory go to the system temp directory —
// and every command that put them there removes them when it ends, where
// each serve, doctor, pools verify and upstreams review used to leave one
// or two behind.
func TestDemoLeavesNoTempDir(t *testing.T) {
	stateEnv(t)
	state := filepath.Join(t.TempDir(), "state") // under a 0700 directory
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	leftovers := func() []string {
		t.Helper()
		entries, err := os.ReadDir(tmp)
		must(t, err)
		var names []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "airlock-") {
				names = append(names, e.Name())
			}
		}
		return names
	}
	t.Run("serve", func(t *testing.T) {
		c := serveStdio(t, "--state", state)
		if res := callTool(t, c, "list_pools", nil); res.IsError {
			t.Fatal(res)
		}
		// While it runs, the demo pools and the runs directory are there
		// (the fallback was taken: this test tests the cleanup).
		if got := leftovers(); len(got) != 2 {
			t.Fatalf("while serving: %q in the temp dir, want the demo's and the runs'", got)
		}
	}) // its cleanup stops serve
	// The runs directory stays: it holds the output pools the store names,
	// which the next process serving the context opens. The demo goes.
	if got := leftovers(); len(got) != 1 || !strings.HasPrefix(got[0], "airlock-runs-") {
		t.Fatalf("serve left %q in the temp dir, want only its runs directory", got)
	} else {
		must(t, os.RemoveAll(filepath.Join(tmp, got[0])))
	}
	for _, args := range [][]string{
		{"doctor", "--state", state},
		{"pools", "verify", "--state", state},
		{"upstreams", "review", "--state", state},
	} {
		run(t, args...) // doctor may fail on this host: the cleanup is what counts
		// A runs directory is kept by design (output pools live there).
		if got := slices.DeleteFunc(leftovers(), func(n string) bool { return strings.HasPrefix(n, "airlock-runs-") }); len(got) != 0 {
			t.Errorf("%s left %q in the temp dir", strings.Join(args[:len(args)-2], " "), got)
		}
	}
}
