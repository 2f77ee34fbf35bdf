package sources

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

func TestVerifyPool(t *testing.T) {
	dir := t.TempDir()
	pool := filepath.Join(dir, "p")
	os.MkdirAll(pool, 0o755)
	os.WriteFile(filepath.Join(pool, "a.txt"), []byte("a\n"), 0o644)
	m, err := BuildManifest(pool)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := os.Create(filepath.Join(pool, DefaultManifestName))
	m.WriteTo(f)
	f.Close()
	reg, err := OpenRegistry([]PoolConfig{{ID: "p", Description: "d", Path: pool}, {ID: "q", Description: "d", Path: pool}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	ctx, err := reg.Bind("ctx1", []string{"p"})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := ctx.VerifyPool("p"); err != nil || !rep.OK || rep.Files != 1 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	if ctx.Pools()[0].Integrity != IntegrityVerified {
		t.Fatalf("integrity %q", ctx.Pools()[0].Integrity)
	}
	if _, err := ctx.VerifyPool("q"); !errors.Is(err, violation.New(violation.PoolNotSelected, "")) {
		t.Fatalf("unbound pool: %v", err)
	}
	os.WriteFile(filepath.Join(pool, "a.txt"), []byte("tampered\n"), 0o644)
	if _, err := ctx.VerifyPool("p"); !errors.Is(err, violation.New(violation.IntegrityFailure, "")) {
		t.Fatalf("tampered pool: %v", err)
	}
	u := ctx.Usage()
	if u.IntegrityVerified || ctx.Pools()[0].Integrity != IntegrityFailed || u.Violations != 2 {
		t.Fatalf("usage after failure: %+v", u)
	}
}
