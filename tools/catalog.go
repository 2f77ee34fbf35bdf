package tools

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
)

// maxCatalogDescription bounds the pipeline list in run_pipeline's
// description; the schema names every pipeline whatever the length.
const maxCatalogDescription = 4096

// pipelineCatalog specialises run_pipeline's declaration to cfg: the
// schema's `pipeline` is an enum of the configured names, and for each
// pipeline an if/then fixes `params` to exactly its declared parameters
// (types, enums, patterns, lengths, required), so a client can validate
// and a model can choose without guessing. The runner validates against
// this very document.
func pipelineCatalog(cfg *config.Config, _ []toolkit.UpstreamTool) (json.RawMessage, string, error) {
	var schema map[string]any
	if err := json.Unmarshal(runPipeline().InputSchema, &schema); err != nil {
		return nil, "", err
	}
	props := schema["properties"].(map[string]any)
	pipe := props["pipeline"].(map[string]any)
	names := make([]string, 0, len(cfg.Pipelines))
	byName := map[string]config.Pipeline{}
	for _, p := range cfg.Pipelines {
		names = append(names, p.Name)
		byName[p.Name] = p
	}
	slices.Sort(names)
	desc := runPipelineDescription
	if len(names) == 0 {
		pipe["description"] = "No pipelines are configured on this server."
		return mustJSON(schema), desc + "\n\nNo pipelines are configured on this server.", nil
	}
	pipe["enum"] = names
	var cases []any
	var list strings.Builder
	list.WriteString("\n\nPipelines:")
	for _, name := range names {
		p := byName[name]
		then := map[string]any{"properties": map[string]any{"params": paramsSchema(p)}}
		if hasRequired(p) {
			then["required"] = []string{"params"}
		}
		cases = append(cases, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"pipeline": map[string]any{"const": name}}, "required": []string{"pipeline"}},
			"then": then,
		})
		fmt.Fprintf(&list, "\n- %s: %s%s", name, oneLineText(p.Description), paramSummary(p))
	}
	schema["allOf"] = cases
	if list.Len() > maxCatalogDescription {
		list.Reset()
		fmt.Fprintf(&list, "\n\nPipelines: %s (see the input schema for each one's parameters).", strings.Join(names, ", "))
	}
	return mustJSON(schema), desc + list.String(), nil
}

// paramsSchema is one pipeline's params object: its parameters only.
func paramsSchema(p config.Pipeline) map[string]any {
	props := map[string]any{}
	var required []string
	for name, spec := range p.Parameters {
		s := map[string]any{"type": spec.Type}
		if spec.Description != "" {
			s["description"] = spec.Description
		}
		if spec.Type == "integer" || spec.Type == "number" {
			s["minimum"] = 0 // a negative value would be an option to the program (pipeline.go)
		}
		if spec.Type == "string" {
			max := spec.MaxLength
			if max == 0 {
				max = 256
			}
			s["maxLength"] = max
			if len(spec.Enum) > 0 {
				s["enum"] = spec.Enum
			}
			if spec.Pattern != "" {
				s["pattern"] = "^(?:" + spec.Pattern + ")$" // the config's pattern matches in full
			}
		}
		props[name] = s
		if spec.Required {
			required = append(required, name)
		}
	}
	slices.Sort(required)
	out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		out["required"] = required
	}
	return out
}

func hasRequired(p config.Pipeline) bool {
	for _, spec := range p.Parameters {
		if spec.Required {
			return true
		}
	}
	return false
}

func paramSummary(p config.Pipeline) string {
	if len(p.Parameters) == 0 {
		return ""
	}
	names := make([]string, 0, len(p.Parameters))
	for n := range p.Parameters {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		spec := p.Parameters[n]
		parts[i] = n + " (" + spec.Type
		if spec.Required {
			parts[i] += ", required"
		}
		parts[i] += ")"
	}
	return " Params: " + strings.Join(parts, ", ") + "."
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and numbers always encode
	}
	return b
}
