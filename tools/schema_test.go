package tools

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/internal/testkit/golden"
)

// TestToolSchemasAreCurrent snapshots every tool's input schema in
// schemas/tools/, so a change to what the agent may send shows up in review.
func TestToolSchemasAreCurrent(t *testing.T) {
	for _, tool := range All() {
		golden.Check(t, filepath.Join("..", "schemas", "tools", tool.Name+".schema.json"), tool.InputSchema, "make schemas")
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
