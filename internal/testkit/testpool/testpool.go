// Package testpool writes source pools for tests: files under a directory
// and the sha256sum-format manifest (SHA256SUMS) that makes them a pool.
// Its invariant: the manifest Write writes lists exactly the files it
// wrote, with their true digests, in name order, so a test that wants a
// tampered or partial manifest has to write one itself and says so.
//
// It is test code (internal/testkit): TestTestPackagesNotShipped keeps it
// out of the binary.
package testpool

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ManifestName is the manifest's file name in a pool directory.
const ManifestName = "SHA256SUMS"

// WriteFile writes content to the file name (slash-separated) under dir,
// creating its parent directories.
func WriteFile(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Write writes files (name → content) under dir and a manifest listing
// them.
func Write(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	var m strings.Builder
	for _, name := range slices.Sorted(maps.Keys(files)) {
		WriteFile(t, dir, name, files[name])
		sum := sha256.Sum256([]byte(files[name]))
		m.WriteString(hex.EncodeToString(sum[:]) + "  " + name + "\n")
	}
	WriteFile(t, dir, ManifestName, m.String())
}
