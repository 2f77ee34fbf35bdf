package config_test

import (
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/testkit/golden"
	"github.com/airlock-dev/airlock/schemas"
)

// TestConfigSchemaIsCurrent fails when schemas/config.schema.json no longer
// matches the Go types; run `make schemas` (go test ./internal/config -update).
func TestConfigSchemaIsCurrent(t *testing.T) {
	got, err := schemas.Reflect(&config.Config{})
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("..", "..", "schemas", "config.schema.json"), got, "make schemas")
}
