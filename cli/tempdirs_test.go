package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoLeavesNoTempDir (issue 24 item 10): every command that loads
// the demo writes its pools to a temp directory of its own and removes it
// when it ends, where each serve, doctor, pools verify and upstreams
// review used to leave one or two behind. The runs directory never goes
// there (issue 24 item 11): under a private (0700) state directory it
// stays in it, with the output pools the store names.
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
		// While it runs, the demo pools are there (this test tests the
		// cleanup); the runs directory is in the state directory.
		if got := leftovers(); len(got) != 1 || !strings.HasPrefix(got[0], "airlock-demo-") {
			t.Fatalf("while serving: %q in the temp dir, want the demo's only", got)
		}
		if st, err := os.Stat(filepath.Join(state, "runs")); err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("runs directory in the state directory: %v, %v", st, err)
		}
	}) // its cleanup stops serve
	if got := leftovers(); len(got) != 0 {
		t.Fatalf("serve left %q in the temp dir", got)
	}
	for _, args := range [][]string{
		{"doctor", "--state", state},
		{"pools", "verify", "--state", state},
		{"upstreams", "review", "--state", state},
	} {
		run(t, args...) // doctor may fail on this host: the cleanup is what counts
		if got := leftovers(); len(got) != 0 {
			t.Errorf("%s left %q in the temp dir", strings.Join(args[:len(args)-2], " "), got)
		}
	}
}
