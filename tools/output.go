package tools

import (
	"embed"
	"encoding/json"
	"fmt"
)

// The output schemas of the four tools: what structuredContent holds, the
// success shapes and the refusal every tool may answer with instead
// ({"error": {...}}, isError: true). Hand-written next to the handlers that
// fill them; server tests validate every result they see against them
// (server/harness_test.go: call), so the two cannot drift apart unnoticed.
//
//go:embed output/*.json
var outputFiles embed.FS

// refusalSchema is the runner's error shape (internal/execution/runner/finish.go boundError).
var refusalSchema = map[string]any{
	"type":     "object",
	"required": []string{"error"},
	"properties": map[string]any{
		"error": map[string]any{
			"type":     "object",
			"required": []string{"code", "message"},
			"properties": map[string]any{
				"code":           map[string]any{"type": "string", "description": "a stable violation code, e.g. PATH_OUTSIDE_POOLS"},
				"message":        map[string]any{"type": "string"},
				"ref":            map[string]any{"type": "string", "description": "finds the full error in the log and the audit record"},
				"limit":          map[string]any{"type": "string"},
				"pattern":        map[string]any{"type": "string"},
				"retry_after_ms": map[string]any{"type": "integer"},
			},
		},
	},
}

// outputSchema returns tool's output schema with the refusal inlined.
func outputSchema(tool string) json.RawMessage {
	raw, err := outputFiles.ReadFile("output/" + tool + ".json")
	if err != nil {
		panic(fmt.Sprintf("tool %s has no output schema: %v", tool, err))
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		panic(fmt.Sprintf("output schema of %s: %v", tool, err))
	}
	doc["$defs"] = map[string]any{"refusal": refusalSchema}
	return mustJSON(doc)
}
