package tools

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/fence"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
)

// Bounds of the comm.mcp catalog (issue 15): one description line, one
// input schema carried in declare_need's schema, and the whole list.
const (
	maxCatalogToolDescription = 300
	maxCatalogSchemaBytes     = 8 << 10
	// maxCatalogSchemasBytes bounds all pinned schemas carried together,
	// so many upstream tools cannot make tools/list unbounded; the
	// runner checks every call against its pin either way.
	maxCatalogSchemasBytes = 256 << 10
)

// declareCatalog specialises declare_need to the approved upstream tools:
// the description lists them (upstream/tool: description), and the schema
// gets, per tool, an if/then that fixes parameters.arguments to the tool's
// pinned input schema, so a client can validate and a model can choose
// without guessing. Only approved, unchanged definitions are here (the
// runner passes the usable pins), and every description is sanitized
// (fence.Sanitize: invisible, bidi, tag and control characters removed),
// flattened to one line and cut: an upstream's words cannot add lines
// that read as Airlock's. The runner builds it per caller (the tools that
// caller's policy may use, from the pins as they are when it lists) and
// checks every call against the pins in the store whatever it says.
func declareCatalog(cfg *config.Config, ups []toolkit.UpstreamTool) (json.RawMessage, string, error) {
	base := declareNeed()
	if len(ups) == 0 {
		return base.InputSchema, base.Description, nil
	}
	var schema map[string]any
	if err := json.Unmarshal(base.InputSchema, &schema); err != nil {
		return nil, "", err
	}
	var list strings.Builder
	list.WriteString("\n\nUpstream MCP tools you may name in a comm.mcp need (parameters.upstream, parameters.tool, parameters.arguments; the policy judges each as capability mcp.<upstream>.<tool>):")
	var cases []any
	schemaBytes := 0
	for _, u := range ups {
		fmt.Fprintf(&list, "\n- %s/%s: %s", u.Upstream, u.Tool, catalogLine(u.Description))
		if len(u.InputSchema) == 0 || len(u.InputSchema) > maxCatalogSchemaBytes || schemaBytes+len(u.InputSchema) > maxCatalogSchemasBytes {
			continue
		}
		schemaBytes += len(u.InputSchema)
		var in any
		if json.Unmarshal(u.InputSchema, &in) != nil {
			continue
		}
		cases = append(cases, map[string]any{
			"if": map[string]any{
				"properties": map[string]any{
					"operation":  map[string]any{"const": "comm.mcp"},
					"parameters": map[string]any{"properties": map[string]any{"upstream": map[string]any{"const": u.Upstream}, "tool": map[string]any{"const": u.Tool}}, "required": []string{"upstream", "tool"}},
				},
				"required": []string{"operation", "parameters"},
			},
			"then": map[string]any{"properties": map[string]any{"parameters": map[string]any{"properties": map[string]any{"arguments": in}}}},
		})
	}
	if len(cases) > 0 {
		schema["allOf"] = cases
	}
	desc := list.String()
	if len(desc) > maxCatalogDescription {
		desc = desc[:maxCatalogDescription] + "\n(list cut; the input schema holds every tool)"
	}
	return mustJSON(schema), base.Description + desc, nil
}

// catalogLine is an upstream's description as the catalog shows it.
func catalogLine(s string) string {
	clean, _ := fence.Sanitize(s)
	clean = oneLineText(clean)
	if r := []rune(clean); len(r) > maxCatalogToolDescription {
		clean = string(r[:maxCatalogToolDescription]) + "…"
	}
	return clean
}
