package config_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/schemas"
)

var update = flag.Bool("update", false, "rewrite the committed schema files")

// TestConfigSchemaIsCurrent fails when schemas/config.schema.json no longer
// matches the Go types; run `make schemas` (go test ./internal/config -update).
func TestConfigSchemaIsCurrent(t *testing.T) {
	got, err := schemas.Reflect(&config.Config{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "..", "schemas", "config.schema.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run `make schemas`", path)
	}
}
