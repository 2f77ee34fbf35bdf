package tools

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the committed tool schema snapshots")

// TestToolSchemasAreCurrent snapshots every tool's input schema in
// schemas/tools/, so a change to what the agent may send shows up in review.
func TestToolSchemasAreCurrent(t *testing.T) {
	for _, tool := range All() {
		path := filepath.Join("..", "schemas", "tools", tool.Name+".schema.json")
		if *update {
			if err := os.WriteFile(path, tool.InputSchema, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run `make schemas`)", tool.Name, err)
		}
		if !bytes.Equal(tool.InputSchema, want) {
			t.Errorf("%s is stale: run `make schemas`", path)
		}
	}
}

// TestEveryToolDeclaresItself: annotations and tier are explicit, the
// capability is derivable from zero arguments, and the schema refuses
// unknown properties.
func TestEveryToolDeclaresItself(t *testing.T) {
	for _, tool := range All() {
		if tool.Name == "" || tool.Description == "" || tool.Tier == "" || tool.Handle == nil || tool.NewArgs == nil {
			t.Errorf("tool %q is incompletely declared", tool.Name)
		}
		if !bytes.Contains(tool.InputSchema, []byte(`"additionalProperties": false`)) {
			t.Errorf("%s: schema must refuse unknown properties", tool.Name)
		}
		if tool.Capability(tool.NewArgs()) == "" {
			t.Errorf("%s: empty capability", tool.Name)
		}
		if tool.ReadOnly && tool.Tier != "read" {
			t.Errorf("%s: read-only hint on a %s-tier tool", tool.Name, tool.Tier)
		}
	}
}
