package sources

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/testkit/testpool"
)

func TestPoolConfigValidate(t *testing.T) {
	ok := PoolConfig{ID: "docs", Path: "/srv/docs"}
	tests := []struct {
		name   string
		mutate func(*PoolConfig)
		valid  bool
	}{
		{"minimal", func(*PoolConfig) {}, true},
		{"full", func(c *PoolConfig) { c.ID = "a0_.-z"; c.Trust = Trusted; c.Manifest = "meta/SUMS"; c.Description = "d" }, true},
		{"untrusted", func(c *PoolConfig) { c.Trust = Untrusted }, true},
		{"absolute manifest", func(c *PoolConfig) { c.Manifest = "/etc/sums" }, true},
		{"64-char id", func(c *PoolConfig) { c.ID = strings.Repeat("a", 64) }, true},
		{"65-char id", func(c *PoolConfig) { c.ID = strings.Repeat("a", 65) }, false},
		{"empty id", func(c *PoolConfig) { c.ID = "" }, false},
		{"upper id", func(c *PoolConfig) { c.ID = "Docs" }, false},
		{"id starts with dot", func(c *PoolConfig) { c.ID = ".docs" }, false},
		{"id with slash", func(c *PoolConfig) { c.ID = "a/b" }, false},
		{"id with space", func(c *PoolConfig) { c.ID = "a b" }, false},
		{"empty path", func(c *PoolConfig) { c.Path = "" }, false},
		{"NUL path", func(c *PoolConfig) { c.Path = "/a\x00" }, false},
		{"bad trust", func(c *PoolConfig) { c.Trust = "Trusted" }, false},
		{"manifest escapes", func(c *PoolConfig) { c.Manifest = "../SUMS" }, false},
		{"manifest NUL", func(c *PoolConfig) { c.Manifest = "S\x00" }, false},
		{"long description", func(c *PoolConfig) { c.Description = strings.Repeat("d", 5000) }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mutate(&c)
			err := c.Validate()
			if (err == nil) != tc.valid {
				t.Fatalf("Validate(%+v) = %v, want valid=%v", c, err, tc.valid)
			}
			if err != nil && !errors.Is(err, ErrInvalidPool) {
				t.Fatalf("error does not wrap ErrInvalidPool: %v", err)
			}
		})
	}
	many := PoolConfig{ID: "BAD", Trust: "x"}
	if err := many.Validate(); strings.Count(err.Error(), "\n") < 2 {
		t.Fatalf("Validate should report every problem: %v", err)
	}
}

func TestOpenRegistryErrors(t *testing.T) {
	good := t.TempDir()
	testpool.WriteFile(t, good, "a", "a")
	writeSums(t, filepath.Join(good, DefaultManifestName), map[string]string{"a": "a"})
	badManifest := t.TempDir()
	os.WriteFile(filepath.Join(badManifest, DefaultManifestName), []byte(hA+"  a\n\nnot a line\n"), 0o644)
	noManifest := t.TempDir()
	tests := []struct {
		name     string
		cfgs     []PoolConfig
		opts     *Options
		sentinel error
		text     string
	}{
		{"duplicate id", []PoolConfig{{ID: "a", Path: good}, {ID: "a", Path: good}}, nil, ErrDuplicatePool, ""},
		{"invalid config", []PoolConfig{{ID: "A", Path: good}}, nil, ErrInvalidPool, ""},
		{"relative path", []PoolConfig{{ID: "a", Path: "rel/dir"}}, nil, ErrInvalidPool, "absolute"},
		{"missing dir", []PoolConfig{{ID: "a", Path: filepath.Join(good, "nope")}}, nil, os.ErrNotExist, ""},
		{"missing manifest", []PoolConfig{{ID: "a", Path: noManifest}}, nil, os.ErrNotExist, ""},
		{"bad manifest names its line", []PoolConfig{{ID: "a", Path: badManifest}}, nil, ErrManifestSyntax, "line 3"},
		{"negative option", nil, &Options{MaxReadBytes: -1}, ErrInvalidOptions, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := OpenRegistry(tc.cfgs, tc.opts)
			if err == nil {
				r.Close()
				t.Fatal("OpenRegistry succeeded")
			}
			if !errors.Is(err, tc.sentinel) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("err = %v, want %v containing %q", err, tc.sentinel, tc.text)
			}
		})
	}
}

func TestManifestLocations(t *testing.T) {
	dir := t.TempDir()
	testpool.WriteFile(t, dir, "a", "a")
	testpool.WriteFile(t, dir, "meta/README", "")
	writeSums(t, filepath.Join(dir, "meta", "SUMS"), map[string]string{"a": "a"})
	elsewhere := filepath.Join(t.TempDir(), "pool.sums")
	writeSums(t, elsewhere, map[string]string{"a": "a"})
	// A relative manifest that is a symlink out of the pool is refused by the root.
	mklink(t, elsewhere, filepath.Join(dir, "linked.sums"))
	for _, m := range []string{"meta/SUMS", elsewhere} {
		r, err := OpenRegistry([]PoolConfig{{ID: "p", Path: dir, Manifest: m}}, nil)
		if err != nil {
			t.Fatalf("manifest %q: %v", m, err)
		}
		c := bindAll(t, r)
		if _, err := c.Read("p", "a", 0, 0); err != nil {
			t.Fatalf("manifest %q: read: %v", m, err)
		}
		r.Close()
	}
	if r, err := OpenRegistry([]PoolConfig{{ID: "p", Path: dir, Manifest: "linked.sums"}}, nil); err == nil {
		r.Close()
		t.Fatal("relative manifest symlinked out of the pool was accepted")
	}
}

func TestVerify(t *testing.T) {
	h := newHostile(t, &Options{MaxFileBytes: 1 << 10})
	testpool.WriteFile(t, h.pool, "big", strings.Repeat("b", 2<<10))
	writeSums(t, filepath.Join(h.base, "big.sums"), map[string]string{"big": strings.Repeat("b", 2<<10), "ok": "ok"})
	testpool.WriteFile(t, h.pool, "ok", "ok")
	r2, err := OpenRegistry([]PoolConfig{{ID: "big", Path: h.pool, Manifest: filepath.Join(h.base, "big.sums")}}, &Options{MaxFileBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()

	reports := h.reg.Verify()
	if len(reports) != 2 || reports[0].PoolID != "docs" || reports[1].PoolID != "other" {
		t.Fatalf("reports %+v", reports)
	}
	if !reports[1].OK || reports[1].Files != 1 || len(reports[1].Problems) != 0 {
		t.Fatalf("other pool: %+v", reports[1])
	}
	docs := reports[0]
	got := map[string]string{}
	for _, p := range docs.Problems {
		got[p.Path] = p.Kind
	}
	want := map[string]string{
		"edited.txt":  ProblemMismatch,
		"missing.txt": ProblemMissing,
		"adir":        ProblemUnreadable,
		"loop":        ProblemUnreadable,
		"abs":         ProblemOutsidePool,
		"rel":         ProblemOutsidePool,
		"chain":       ProblemOutsidePool,
		"outdir/f":    ProblemOutsidePool,
	}
	if docs.OK || docs.Files != 13 || len(got) != len(want) {
		t.Fatalf("docs report: %+v", docs)
	}
	for p, k := range want {
		if got[p] != k {
			t.Errorf("%s: kind %q, want %q", p, got[p], k)
		}
	}
	rb := r2.Verify()[0]
	if rb.OK || len(rb.Problems) != 1 || rb.Problems[0].Kind != ProblemTooLarge {
		t.Fatalf("big pool: %+v", rb)
	}
	r2.Close()
	if rb := r2.Verify()[0]; rb.OK {
		t.Fatal("Verify after Close reported OK")
	}
}
