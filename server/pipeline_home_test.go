package server

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/testkit/testpool"
)

// TestPipelinePoolUnderPrivateHome (issue 24 item 11): a pool below a 0700
// directory — a user's home — used to turn run_pipeline off for every
// pool ("not traversable by the sandbox user (uid 65534)"). The sandbox
// binds the manifest's files as root before it drops to that uid, so the
// pipeline reads them through the real server path, the post-run
// integrity check (sources.Context.VerifyUnchanged) still passes, and the
// output is the pool's bytes. Hostile: with the pool bound, the pipeline
// cannot list the private directory or read the file beside the pool in
// it, by pool path or by host path, nor the unlisted file in the pool.
// What still cannot work is said precisely: a pool file the sandbox uid
// may not read (0600) is UNAVAILABLE naming the pool and the file, not
// the host path.
func TestPipelinePoolUnderPrivateHome(t *testing.T) {
	const data = "name,amount\nalpha,3\nbeta,4\n"
	home := filepath.Join(t.TempDir(), "home") // t.TempDir's own chain is 0700 too
	pool := filepath.Join(home, "pool")
	testpool.Write(t, pool, map[string]string{"data.csv": data})
	testpool.WriteFile(t, pool, ".env", "HOME_KEY=sk-live-beside-the-pool\n") // not in the manifest
	testpool.WriteFile(t, home, "diary.txt", "PRIVATE-DIARY\n")
	must(t, os.Chmod(home, 0o700))
	cfg := fmt.Sprintf(testConfig, "runner")
	for old, add := range map[string]string{
		"\n  - {id: delta,":                    fmt.Sprintf("\n  - {id: home, description: A pool in a private home, path: %q, trust: trusted}", pool),
		"pools: [alpha, delta], initial_phase": "pools: [alpha, delta, home], initial_phase",
		"\npipelines:\n": fmt.Sprintf(`
pipelines:
  - name: read_home
    description: Copies home/data.csv and prints it.
    argv: [/bin/sh, -c, 'cat {pool.home}/data.csv; cat {pool.home}/data.csv > {out}/copy.csv']
    inputs: [home]
    outputs: [copy.csv]
  - name: snoop_home
    description: Tries the private directory around its pool.
    argv: [/bin/sh, -c, 'ls -A {pool.home}; for f in {pool.home}/.env {pool.home}/../diary.txt "$1/diary.txt" "$1/pool/.env"; do cat "$f"; done; ls -A "$1" "$1/pool"; echo snooped', sh, %q]
    inputs: [home]
    outputs: [x.txt]
`, home),
	} {
		if !strings.Contains(cfg, old) {
			t.Fatalf("testConfig no longer holds %q", old)
		}
		if strings.HasPrefix(old, "\n  - ") {
			add += old
		}
		cfg = strings.Replace(cfg, old, add, 1)
	}
	f := newFixtureConfig(t, cfg)
	c := f.connect(t)

	t.Run("reads the pool", func(t *testing.T) {
		res := callOK(t, c, "run_pipeline", map[string]any{"pipeline": "read_home"})
		ev := structured(t, res)
		sum := sha256.Sum256([]byte(data))
		outs, _ := ev["outputs"].([]any)
		if ev["exit_code"] != 0.0 || len(outs) != 1 || outs[0].(map[string]any)["sha256"] != hex.EncodeToString(sum[:]) {
			t.Fatalf("evidence: %v", ev)
		}
		if !strings.Contains(text(res), data) {
			t.Fatalf("the pipeline did not print the pool's bytes: %s", text(res))
		}
		// Published where the store says, in the (0700) state directory:
		// the runs directory no longer falls back to the system temp dir.
		got, err := os.ReadFile(filepath.Join(f.state, "runs", ev["run_id"].(string), "published", "copy.csv"))
		if err != nil || string(got) != data {
			t.Fatalf("published copy.csv: %q, %v", got, err)
		}
		if st, err := os.Stat(filepath.Join(f.state, "runs")); err != nil || st.Mode().Perm() != 0o700 {
			t.Fatalf("runs directory: %v, %v", st, err)
		}
	})
	t.Run("cannot reach around the pool", func(t *testing.T) {
		res := callOK(t, c, "run_pipeline", map[string]any{"pipeline": "snoop_home"})
		out := text(res)
		if !strings.Contains(out, "--- stdout ---\ndata.csv\nsnooped\n") {
			t.Fatalf("the run did not get through its script: %s", out)
		}
		for _, leak := range []string{"PRIVATE-DIARY", "sk-live-beside-the-pool", "diary.txt\n", ".env\n"} {
			if strings.Contains(out, leak) {
				t.Errorf("the pipeline reached %q around its pool:\n%s", leak, out)
			}
		}
		if n := strings.Count(out, "No such file or directory"); n != 6 {
			t.Errorf("%d of the 6 reads and listings around the pool failed as missing:\n%s", n, out)
		}
	})
	t.Run("unreadable pool file", func(t *testing.T) {
		name := filepath.Join(pool, "data.csv")
		must(t, os.Chmod(name, 0o600))
		defer os.Chmod(name, 0o644)
		res := call(t, c, "run_pipeline", map[string]any{"pipeline": "read_home"})
		if code(res) != "UNAVAILABLE" || !strings.Contains(text(res), `pool home: file "data.csv" is not readable`) || strings.Contains(text(res), home) {
			t.Fatalf("a 0600 pool file: %s", text(res))
		}
		recs := f.auditRecords(t)
		if last := recs[len(recs)-1]; last.Tool != "run_pipeline" || last.Violation != "UNAVAILABLE" {
			t.Fatalf("audit: %+v", last)
		}
	})
}
