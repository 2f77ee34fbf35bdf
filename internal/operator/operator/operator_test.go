package operator

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/policy/killswitch"
)

// TestInUse: a directory is in use once a server left one of its files
// there (the store, the witness, the kill switch file), or whatever it
// holds when the store is PostgreSQL; an empty or mistyped one is not.
func TestInUse(t *testing.T) {
	t.Setenv(state.StoreEnv, "")
	if InUse(t.TempDir()) {
		t.Error("an empty directory is in use")
	}
	if InUse(filepath.Join(t.TempDir(), "mistyped")) {
		t.Error("a missing directory is in use")
	}
	for _, name := range []string{state.DBFile, state.WitnessFile, killswitch.FileName} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if !InUse(dir) {
			t.Errorf("a directory holding %s is not in use", name)
		}
	}
	t.Setenv(state.StoreEnv, "postgres://airlock@db/airlock")
	if !InUse(t.TempDir()) {
		t.Error("with the store in PostgreSQL, a directory is not in use")
	}
}
