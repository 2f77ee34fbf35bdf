package sources

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/testkit/testpool"
)

// secretMarker is the content of every file outside the pool. No read may
// ever return it.
const secretMarker = "TOP-SECRET-OUTSIDE-THE-POOL"

func sum(b string) [32]byte { return sha256.Sum256([]byte(b)) }

func hexSum(b string) string { s := sum(b); return hex.EncodeToString(s[:]) }

func mklink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// writeSums writes a manifest listing name -> sha256(content).
func writeSums(t testing.TB, file string, listed map[string]string) {
	t.Helper()
	names := make([]string, 0, len(listed))
	for n := range listed {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(hexSum(listed[n]) + "  " + n + "\n")
	}
	if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hostile is a pool built to be attacked, with secrets beside it.
type hostile struct {
	base, pool string
	reg        *Registry
}

// newHostile builds:
//
//	base/secret.txt, base/outdir/f        secretMarker (outside the pool)
//	pool/a.txt "hello", pool/sub/b.txt    listed
//	pool/%2e%2e                           a file literally named so, listed
//	pool/edited.txt                       listed with the hash of other content
//	pool/unlisted.txt                     on disk, not listed
//	pool/missing.txt                      listed, not on disk
//	pool/adir/                            a directory, listed
//	pool/abs  -> base/secret.txt          absolute link out, listed with the SECRET's hash
//	pool/rel  -> ../secret.txt            relative link out, listed with the SECRET's hash
//	pool/chain -> rel                     chain out, listed with the SECRET's hash
//	pool/outdir -> ../outdir              directory link out; outdir/f listed with the SECRET's hash
//	pool/okln -> a.txt, pool/okdir -> sub links that stay inside, listed
//	pool/loop -> loop                     listed
//
// Links out are listed with the secret's real digest so that only os.Root,
// not the hash check, stands between the agent and the secret.
func newHostile(t testing.TB, opts *Options, extraPools ...PoolConfig) *hostile {
	t.Helper()
	base := t.TempDir()
	pool := filepath.Join(base, "pool")
	testpool.WriteFile(t, base, "secret.txt", secretMarker)
	testpool.WriteFile(t, base, "outdir/f", secretMarker)
	testpool.WriteFile(t, pool, "a.txt", "hello")
	testpool.WriteFile(t, pool, "sub/b.txt", "bee")
	testpool.WriteFile(t, pool, "%2e%2e", "percent")
	testpool.WriteFile(t, pool, "edited.txt", "tampered")
	testpool.WriteFile(t, pool, "unlisted.txt", "nobody listed me")
	if err := os.Mkdir(filepath.Join(pool, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	mklink(t, filepath.Join(base, "secret.txt"), filepath.Join(pool, "abs"))
	mklink(t, "../secret.txt", filepath.Join(pool, "rel"))
	mklink(t, "rel", filepath.Join(pool, "chain"))
	mklink(t, "../outdir", filepath.Join(pool, "outdir"))
	mklink(t, "a.txt", filepath.Join(pool, "okln"))
	mklink(t, "sub", filepath.Join(pool, "okdir"))
	mklink(t, "loop", filepath.Join(pool, "loop"))
	writeSums(t, filepath.Join(pool, DefaultManifestName), map[string]string{
		"a.txt":       "hello",
		"sub/b.txt":   "bee",
		"%2e%2e":      "percent",
		"edited.txt":  "original",
		"missing.txt": "gone",
		"adir":        "",
		"abs":         secretMarker,
		"rel":         secretMarker,
		"chain":       secretMarker,
		"outdir/f":    secretMarker,
		"okln":        "hello",
		"okdir/b.txt": "bee",
		"loop":        "x",
	})
	other := filepath.Join(base, "other")
	testpool.WriteFile(t, other, "o.txt", "other pool")
	writeSums(t, filepath.Join(other, DefaultManifestName), map[string]string{"o.txt": "other pool"})
	cfgs := append([]PoolConfig{
		{ID: "docs", Description: "hostile pool", Path: pool},
		{ID: "other", Description: "a second pool", Path: other, Trust: Trusted},
	}, extraPools...)
	reg, err := OpenRegistry(cfgs, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	return &hostile{base: base, pool: pool, reg: reg}
}

func (h *hostile) bind(t testing.TB, ids ...string) *Context {
	t.Helper()
	if ids == nil {
		ids = []string{"docs"}
	}
	c, err := h.reg.Bind("ctx-test", ids)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// codeOf returns the violation code of err, "" for nil and "not-a-violation"
// for an error that is not a *violation.Error.
func codeOf(err error) violation.Code {
	if err == nil {
		return ""
	}
	var v *violation.Error
	if !errors.As(err, &v) {
		return "not-a-violation"
	}
	return v.Code
}
