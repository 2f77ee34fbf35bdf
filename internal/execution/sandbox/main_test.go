//go:build linux

package sandbox_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

// The test binary runs with cgo and -race, so it cannot be the trampoline.
// The first test that needs a sandbox builds a cgo-free trampoline and the
// hostile fixture program into a world-readable directory (the pipeline runs
// as nobody and must be able to traverse to it). Building lazily keeps fuzz
// workers, which re-run TestMain, fast.
var (
	fixtureDir     string // 0755: trampoline, hostile, scripts
	trampolinePath string
	hostilePath    string
	buildOnce      sync.Once
	buildErr       error
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	if tr := os.Getenv(spareHelperEnv); tr != "" {
		return spareHelper(tr) // TestSpareDiesWithServer's stand-in server
	}
	dir, err := os.MkdirTemp("", "airlock-sandbox-fixtures-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	fixtureDir = dir
	trampolinePath = filepath.Join(dir, "trampoline")
	hostilePath = filepath.Join(dir, "hostile")
	return m.Run()
}

func setupFixtures(dir string) error {
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	for out, pkg := range map[string]string{
		trampolinePath: "./internal/trampolinecmd",
		hostilePath:    "./testdata/hostile",
	} {
		cmd := exec.Command("go", "build", "-o", out, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	scripts, err := filepath.Glob("testdata/*.sh")
	if err != nil {
		return err
	}
	py, _ := filepath.Glob("testdata/*.py")
	for _, src := range append(scripts, py...) {
		if err := copyFile(src, filepath.Join(dir, filepath.Base(src)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

var (
	sharedOnce sync.Once
	shared     *sandbox.Sandbox
	sharedErr  error
)

// newSandbox returns the package's shared Sandbox, skipping the test when
// the machine lacks what it needs (with Probe's reason) — on the reference
// machines nothing is skipped.
func newSandbox(t testing.TB) *sandbox.Sandbox {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("sandbox tests need root (namespaces, cgroups, uid drop)")
	}
	buildOnce.Do(func() { buildErr = setupFixtures(fixtureDir) })
	if buildErr != nil {
		t.Fatalf("building fixtures: %v", buildErr)
	}
	if rep := sandbox.Probe(); !rep.Ready() {
		t.Skipf("sandbox not available here: %v", rep.Missing())
	}
	sharedOnce.Do(func() {
		shared, sharedErr = sandbox.New(&sandbox.Options{
			TrampolinePath: trampolinePath,
			Logger:         slog.New(&runRecorder{}),
			// Every test runs through the spare path (spare.go); a run
			// that finds no spare ready starts one itself, so the cold
			// path is exercised too.
			Spare: true,
		})
	})
	if sharedErr != nil {
		t.Fatalf("New: %v", sharedErr)
	}
	return shared
}

// runRecorder is a slog.Handler that remembers the cgroup of every run the
// shared sandbox starts, so tests can check that each one was removed
// without being confused by other processes' sandboxes.
type runRecorder struct{}

var (
	startedMu      sync.Mutex
	startedCgroups []string
)

func (*runRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *runRecorder) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h *runRecorder) WithGroup(string) slog.Handler          { return h }
func (*runRecorder) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "cgroup" {
			startedMu.Lock()
			startedCgroups = append(startedCgroups, a.Value.String())
			startedMu.Unlock()
		}
		return true
	})
	return nil
}

// runDirs is one test's directory layout, all traversable by the sandbox uid.
type runDirs struct {
	root, pool, secret, out, tmp string
}

func newRunDirs(t testing.TB) runDirs {
	t.Helper()
	root := t.TempDir()
	// t.TempDir's parent is 0700; the pipeline (uid 65534) must traverse it.
	for _, d := range []string{filepath.Dir(root), root} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	d := runDirs{
		root:   root,
		pool:   filepath.Join(root, "pool"),
		secret: filepath.Join(root, "secret-pool"),
		out:    filepath.Join(root, "run", "out"),
		tmp:    filepath.Join(root, "run", "tmp"),
	}
	for _, p := range []string{d.pool, d.secret, d.out, d.tmp} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(d.pool, "data.csv"), "name,amount\nalpha,3\nbeta,4\ngamma,5\n")
	writeFile(t, filepath.Join(d.secret, "secret.txt"), "TOP-SECRET\n")
	return d
}

// pools is the test pool as the sandbox mounts it: /pools/p/data.csv.
func (d runDirs) pools() []sandbox.Pool {
	return []sandbox.Pool{{ID: "p", Dir: d.pool, Files: []string{"data.csv"}}}
}

// collectInto copies the regular files of the run's /out (top level) into
// dir on the host, so tests can inspect what the pipeline wrote.
func collectInto(dir string) func(*os.Root) error {
	return func(out *os.Root) error {
		ents, err := fs.ReadDir(out.FS(), ".")
		if err != nil {
			return err
		}
		for _, e := range ents {
			if !e.Type().IsRegular() {
				continue
			}
			b, err := out.ReadFile(e.Name())
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func init() {
	// The test binary doubles as a (refusing) trampoline for
	// TestNewFailsClosed: it is built with cgo, which the trampoline detects.
	sandbox.MaybeRunTrampoline()
}
