//go:build linux

package sources

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// TestVerifyUnchanged (issue 26 item 9): after a run, every file the pool
// gave it must still be the version checked before — any change in
// between, even one that restores the old bytes, is INTEGRITY_FAILURE and
// fails the pool; an untouched pool passes.
func TestVerifyUnchanged(t *testing.T) {
	const content, other = "a,b\n1,2\n", "a,b\n6,6\n" // same size
	tests := []struct {
		name   string
		change func(t *testing.T, pool string)
		ok     bool
	}{
		{"untouched", func(*testing.T, string) {}, true},
		{"read only", func(t *testing.T, pool string) { mustRead(t, filepath.Join(pool, "rows.csv")) }, true},
		{"rewritten in place", func(t *testing.T, pool string) { rewrite(t, filepath.Join(pool, "rows.csv"), other) }, false},
		{"rewritten, then restored", func(t *testing.T, pool string) {
			rewrite(t, filepath.Join(pool, "rows.csv"), other)
			rewrite(t, filepath.Join(pool, "rows.csv"), content)
		}, false},
		{"replaced by a rename", func(t *testing.T, pool string) {
			must(t, os.WriteFile(filepath.Join(pool, ".new"), []byte(other), 0o644))
			must(t, os.Rename(filepath.Join(pool, ".new"), filepath.Join(pool, "rows.csv")))
		}, false},
		{"renamed away and back", func(t *testing.T, pool string) {
			must(t, os.Rename(filepath.Join(pool, "rows.csv"), filepath.Join(pool, ".away")))
			must(t, os.Rename(filepath.Join(pool, ".away"), filepath.Join(pool, "rows.csv")))
		}, false},
		{"removed", func(t *testing.T, pool string) { must(t, os.Remove(filepath.Join(pool, "rows.csv"))) }, false},
		{"the other file rewritten", func(t *testing.T, pool string) { rewrite(t, filepath.Join(pool, "b.txt"), "B\n") }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := filepath.Join(t.TempDir(), "p")
			must(t, os.MkdirAll(pool, 0o755))
			must(t, os.WriteFile(filepath.Join(pool, "rows.csv"), []byte(content), 0o644))
			must(t, os.WriteFile(filepath.Join(pool, "b.txt"), []byte("b\n"), 0o644))
			writeSums(t, filepath.Join(pool, DefaultManifestName), map[string]string{"rows.csv": content, "b.txt": "b\n"})
			pastCtimeTick(t, pool, "rows.csv", "b.txt")
			reg, err := OpenRegistry([]PoolConfig{{ID: "p", Path: pool}}, nil)
			must(t, err)
			defer reg.Close()
			c := bindAll(t, reg)
			rep, err := c.VerifyPool("p")
			must(t, err)
			tt.change(t, pool)
			err = c.VerifyUnchanged(rep)
			if tt.ok {
				if err != nil || c.Pools()[0].Integrity != IntegrityVerified {
					t.Fatalf("%v, integrity %s; want nil, verified", err, c.Pools()[0].Integrity)
				}
				return
			}
			if codeOf(err) != violation.IntegrityFailure || c.Pools()[0].Integrity != IntegrityFailed {
				t.Fatalf("%v, integrity %s; want INTEGRITY_FAILURE, failed", err, c.Pools()[0].Integrity)
			}
		})
	}
}

func rewrite(t *testing.T, name, content string) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0) // in place: same inode
	must(t, err)
	_, err = f.WriteString(content)
	must(t, err)
	must(t, f.Close())
}

func mustRead(t *testing.T, name string) {
	t.Helper()
	_, err := os.ReadFile(name)
	must(t, err)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// pastCtimeTick returns once a file written now gets a later ctime than
// the named files have: so a change the test makes next is a change of
// ctime even where the file system stamps with a coarse clock (a change
// and its undoing within one tick of the files' creation is the limit
// VerifyUnchanged documents, not what these cases test). It waits on the
// file system's clock, not on a duration.
func pastCtimeTick(t *testing.T, dir string, names ...string) {
	t.Helper()
	var newest syscall.Timespec
	for _, n := range names {
		var st syscall.Stat_t
		must(t, syscall.Stat(filepath.Join(dir, n), &st))
		if st.Ctim.Nano() > newest.Nano() {
			newest = st.Ctim
		}
	}
	probe := filepath.Join(t.TempDir(), "tick")
	for {
		must(t, os.WriteFile(probe, nil, 0o600))
		var st syscall.Stat_t
		must(t, syscall.Stat(probe, &st))
		if st.Ctim.Nano() > newest.Nano() {
			return
		}
	}
}
