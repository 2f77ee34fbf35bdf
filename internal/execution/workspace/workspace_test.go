//go:build unix

package workspace_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/workspace"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

func create(t *testing.T, outputs ...string) *workspace.Workspace {
	t.Helper()
	w, err := workspace.Create(t.TempDir(), "run-1", outputs, true)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func put(t *testing.T, w *workspace.Workspace, name, content string) {
	t.Helper()
	p := filepath.Join(w.OutDir(), filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sha(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func TestCreateValidation(t *testing.T) {
	base := t.TempDir()
	badIDs := []string{"", ".", "..", "../x", "a/b", "-rf", ".hidden", "a b", "a\x00", strings.Repeat("x", 129)}
	for _, id := range badIDs {
		if _, err := workspace.Create(base, id, nil, false); !errors.Is(err, workspace.ErrInvalidRunID) {
			t.Errorf("run id %q: got %v", id, err)
		}
	}
	badOutputs := [][]string{
		{""}, {"."}, {".."}, {"/etc/passwd"}, {"../x"}, {"a/../b"}, {"a//b"}, {"./a"}, {"a/"},
		{"a\\b"}, {"a\nb"}, {"a\x00b"}, {"\xff"}, {"a\x7f"}, {strings.Repeat("x", 256)},
		{"dup", "dup"}, {"a", "a/b"}, {"reports/x", "reports"},
	}
	for i, outs := range badOutputs {
		if _, err := workspace.Create(base, fmt.Sprintf("r%d", i), outs, false); !errors.Is(err, workspace.ErrInvalidOutput) {
			t.Errorf("outputs %q: got %v", outs, err)
		}
	}
	if _, err := workspace.Create("relative/base", "r", nil, false); !errors.Is(err, workspace.ErrInvalidBase) {
		t.Errorf("relative base: %v", err)
	}
	w, err := workspace.Create(base, "once", []string{"a.txt", "reports/b.csv"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if w.TempDir() != "" {
		t.Errorf("temp dir %q without allowTemp", w.TempDir())
	}
	if _, err := workspace.Create(base, "once", nil, false); !errors.Is(err, workspace.ErrExists) {
		t.Errorf("reused run id: %v", err)
	}
	if st, err := os.Stat(w.Dir()); err != nil || st.Mode().Perm() != 0o711 {
		t.Errorf("run dir mode %v %v", st.Mode(), err)
	}
}

func TestCollectPublishes(t *testing.T) {
	w := create(t, "summary.txt", "reports/by-name.csv", "never-written.txt")
	put(t, w, "summary.txt", "rows=3\n")
	put(t, w, "reports/by-name.csv", "a,1\n")
	c, err := w.Collect()
	if err != nil {
		t.Fatal(err)
	}
	want := []workspace.Output{
		{Name: "reports/by-name.csv", Size: 4, SHA256: sha("a,1\n")},
		{Name: "summary.txt", Size: 7, SHA256: sha("rows=3\n")},
	}
	if fmt.Sprint(c.Outputs) != fmt.Sprint(want) {
		t.Fatalf("outputs %v, want %v", c.Outputs, want)
	}
	if len(c.Violations) != 0 || fmt.Sprint(c.Missing) != "[never-written.txt]" {
		t.Fatalf("violations %v missing %v", c.Violations, c.Missing)
	}
	lines := want[0].SHA256 + "  reports/by-name.csv\n" + want[1].SHA256 + "  summary.txt\n"
	if c.SnapshotHash != sha(lines) {
		t.Fatalf("snapshot %s, want %s", c.SnapshotHash, sha(lines))
	}
	for _, o := range want {
		b, err := os.ReadFile(filepath.Join(c.PublishedDir, o.Name))
		if err != nil || sha(string(b)) != o.SHA256 {
			t.Fatalf("published %s: %v", o.Name, err)
		}
	}
	if _, err := os.Stat(w.OutDir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("out/ not discarded: %v", err)
	}
	if _, err := w.Collect(); !errors.Is(err, workspace.ErrCollected) {
		t.Fatalf("second collect: %v", err)
	}
	// The documented shell recipe gives the same hash.
	if _, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command("sh", "-c", `find . -type f | sed 's|^\./||' | LC_ALL=C sort | xargs -d '\n' sha256sum | sha256sum`)
		cmd.Dir = c.PublishedDir
		out, err := cmd.Output()
		if err != nil || !strings.HasPrefix(string(out), c.SnapshotHash) {
			t.Fatalf("shell recipe gave %q (%v), want %s", out, err, c.SnapshotHash)
		}
	}
}

// TestSnapshotDeterminism: same outputs, same hash, whatever the
// declaration order or write order; any byte changes it.
func TestSnapshotDeterminism(t *testing.T) {
	collect := func(outputs []string, files map[string]string) string {
		w := create(t, outputs...)
		for n, c := range files {
			put(t, w, n, c)
		}
		c, err := w.Collect()
		if err != nil {
			t.Fatal(err)
		}
		return c.SnapshotHash
	}
	files := map[string]string{"a": "1", "b/c": "2", "z": "3"}
	h1 := collect([]string{"a", "b/c", "z"}, files)
	h2 := collect([]string{"z", "a", "b/c"}, files)
	h3 := collect([]string{"a", "b/c", "z"}, map[string]string{"a": "1", "b/c": "2", "z": "4"})
	if h1 != h2 || h1 == h3 {
		t.Fatalf("h1=%s h2=%s h3=%s", h1, h2, h3)
	}
	if got := workspace.SnapshotHash(nil); got != sha("") {
		t.Fatalf("empty snapshot %s", got)
	}
}

// TestCollectUndeclared: undeclared files and directories are WRITE_ATTEMPT
// violations and are not published.
func TestCollectUndeclared(t *testing.T) {
	w := create(t, "ok.txt", "reports/r.csv")
	put(t, w, "ok.txt", "fine")
	put(t, w, "extra.txt", "smuggled")
	put(t, w, "reports/r.csv", "r")
	put(t, w, "reports/undeclared.csv", "smuggled")
	put(t, w, "hidden/deep/file", "smuggled")
	c, err := w.Collect()
	if err != nil {
		t.Fatal(err)
	}
	got := violationPaths(c)
	if got != "extra.txt hidden reports/undeclared.csv" {
		t.Fatalf("violations: %v", c.Violations)
	}
	for _, v := range c.Violations {
		if v.Code != violation.WriteAttempt {
			t.Fatalf("code %s", v.Code)
		}
	}
	ents, _ := os.ReadDir(c.PublishedDir)
	if len(ents) != 2 || len(c.Outputs) != 2 {
		t.Fatalf("published %v", ents)
	}
}

func violationPaths(c *workspace.Collected) string {
	var ps []string
	for _, v := range c.Violations {
		ps = append(ps, v.Path)
	}
	return strings.Join(ps, " ")
}

// TestCollectSymlink: a declared output that is a symlink — to a secret
// outside, to a file inside, or through a symlinked directory — is refused,
// and the secret is never read.
func TestCollectSymlink(t *testing.T) {
	secretDir := t.TempDir()
	secret := filepath.Join(secretDir, "shadow")
	if err := os.WriteFile(secret, []byte("root:SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	w := create(t, "summary.txt", "copy.txt", "reports/r.csv", "real.txt")
	put(t, w, "real.txt", "real")
	must(t, os.Symlink(secret, filepath.Join(w.OutDir(), "summary.txt")))
	must(t, os.Symlink("real.txt", filepath.Join(w.OutDir(), "copy.txt")))
	must(t, os.WriteFile(filepath.Join(secretDir, "r.csv"), []byte("SECRET"), 0o600))
	must(t, os.Symlink(secretDir, filepath.Join(w.OutDir(), "reports")))
	c, err := w.Collect()
	if err != nil {
		t.Fatal(err)
	}
	if got := violationPaths(c); got != "copy.txt reports summary.txt" {
		t.Fatalf("violations %v", c.Violations)
	}
	if len(c.Outputs) != 1 || c.Outputs[0].Name != "real.txt" {
		t.Fatalf("outputs %v", c.Outputs)
	}
	for _, v := range c.Violations {
		if !strings.Contains(v.Detail, "symbolic link") {
			t.Errorf("%s: %s", v.Path, v.Detail)
		}
	}
	filepath.WalkDir(c.PublishedDir, func(p string, d os.DirEntry, err error) error {
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "SECRET") {
			t.Errorf("secret published at %s", p)
		}
		return nil
	})
}

// TestCollectSpecialFiles: a FIFO as a declared output is refused without
// blocking; a declared output that is a directory is refused.
func TestCollectSpecialFiles(t *testing.T) {
	w := create(t, "pipe", "dir.txt")
	must(t, syscall.Mkfifo(filepath.Join(w.OutDir(), "pipe"), 0o644))
	must(t, os.Mkdir(filepath.Join(w.OutDir(), "dir.txt"), 0o755))
	c, err := w.Collect()
	if err != nil {
		t.Fatal(err)
	}
	if got := violationPaths(c); got != "dir.txt pipe" || len(c.Outputs) != 0 {
		t.Fatalf("violations %v outputs %v", c.Violations, c.Outputs)
	}
}

// TestCollectHardLink: hard-linked outputs are refused.
func TestCollectHardLink(t *testing.T) {
	w := create(t, "a.txt")
	other := filepath.Join(filepath.Dir(w.OutDir()), "elsewhere")
	must(t, os.WriteFile(other, []byte("shared inode"), 0o644))
	must(t, os.Link(other, filepath.Join(w.OutDir(), "a.txt")))
	c, err := w.Collect()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Outputs) != 0 || len(c.Violations) != 1 || !strings.Contains(c.Violations[0].Detail, "hard link") {
		t.Fatalf("outputs %v violations %v", c.Outputs, c.Violations)
	}
}

// TestCollectFloodOfFiles: violations are capped, the walk is bounded.
func TestCollectFloodOfFiles(t *testing.T) {
	w := create(t, "ok.txt")
	put(t, w, "ok.txt", "ok")
	for i := 0; i < 150; i++ {
		put(t, w, fmt.Sprintf("junk-%03d", i), "")
	}
	c, err := w.Collect()
	if err != nil {
		t.Fatal(err)
	}
	last := c.Violations[len(c.Violations)-1]
	if len(c.Violations) != 101 || last.Detail != "50 more violations not listed" || len(c.Outputs) != 1 {
		t.Fatalf("%d violations, last %+v", len(c.Violations), last)
	}
}

// TestRemove: out/ and tmp/ go, published outputs stay; an uncollected
// workspace disappears entirely.
func TestRemove(t *testing.T) {
	w := create(t, "a")
	put(t, w, "a", "1")
	must(t, os.WriteFile(filepath.Join(w.TempDir(), "scratch"), []byte("x"), 0o644))
	c, err := w.Collect()
	if err != nil {
		t.Fatal(err)
	}
	must(t, w.Remove())
	if _, err := os.Stat(w.TempDir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("tmp survived: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.PublishedDir, "a")); err != nil {
		t.Fatalf("published output removed: %v", err)
	}
	w2 := create(t, "a")
	put(t, w2, "a", "1")
	must(t, os.Symlink("/etc", filepath.Join(w2.OutDir(), "etc-link")))
	must(t, w2.Remove())
	if _, err := os.Stat(w2.Dir()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("run dir survived: %v", err)
	}
	if _, err := os.Stat("/etc/passwd"); err != nil {
		t.Fatalf("Remove followed a symlink: %v", err)
	}
}

// TestConcurrentCollect: Collect is exactly-once under concurrency (-race).
func TestConcurrentCollect(t *testing.T) {
	w := create(t, "a")
	put(t, w, "a", "1")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := w.Collect(); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 1 {
		t.Fatalf("%d successful collects", ok)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzValidOutputName: every accepted name is canonical — relative, clean,
// no dot elements, no control characters — so one file has one name.
func FuzzValidOutputName(f *testing.F) {
	for _, s := range []string{"a", "a/b.csv", "../x", "/abs", "a//b", "a/./b", "a\nb", "ü/ß", "a\\b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if workspace.ValidOutputName(name) != nil {
			return
		}
		if filepath.IsAbs(name) || filepath.Clean(name) != name || name == "." {
			t.Fatalf("non-canonical name accepted: %q", name)
		}
		for _, elem := range strings.Split(name, "/") {
			if elem == "" || elem == "." || elem == ".." {
				t.Fatalf("dot or empty element accepted: %q", name)
			}
		}
		for _, r := range name {
			if r < 0x20 || r == 0x7f || r == '\\' {
				t.Fatalf("control or backslash accepted: %q", name)
			}
		}
	})
}
