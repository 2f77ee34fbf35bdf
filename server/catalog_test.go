package server

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/airlock-dev/airlock/internal/config"
)

// listedTool is a tool as tools/list puts it on the wire (over stdio, raw:
// mcp-go's client types do not keep every schema keyword).
type listedTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

func runPipelineTool(t *testing.T, f *fixture) listedTool {
	t.Helper()
	p := startStdioInitialized(t, f)
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var resp struct {
		Result struct {
			Tools []listedTool `json:"tools"`
		} `json:"result"`
	}
	must(t, json.Unmarshal([]byte(p.reply(t, 5*time.Second)), &resp))
	for _, tool := range resp.Result.Tools {
		if tool.Name == "run_pipeline" {
			return tool
		}
	}
	t.Fatal("run_pipeline not listed")
	return listedTool{}
}

// TestPipelineCatalogInTheSchema: a client sees the configured pipelines
// (an enum) and each one's parameters, and a standard JSON Schema
// validator on the client side accepts and refuses what the server does.
func TestPipelineCatalogInTheSchema(t *testing.T) {
	f := newFixture(t, "runner")
	tool := runPipelineTool(t, f)
	raw := tool.InputSchema
	var schema struct {
		Properties struct {
			Pipeline struct {
				Enum []string `json:"enum"`
			} `json:"pipeline"`
		} `json:"properties"`
	}
	must(t, json.Unmarshal(raw, &schema))
	var names []string
	for _, p := range f.cfg.Pipelines {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if !slices.Equal(schema.Properties.Pipeline.Enum, names) {
		t.Fatalf("enum %v, want %v", schema.Properties.Pipeline.Enum, names)
	}
	if !strings.Contains(tool.Description, "- greet: Writes a greeting for a name. Params: name (string, required).") {
		t.Fatalf("description does not list greet: %s", tool.Description)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	must(t, err)
	comp := jsonschema.NewCompiler()
	must(t, comp.AddResource("client.json", doc))
	clientSide, err := comp.Compile("client.json")
	must(t, err)
	c := f.connect(t)
	for _, tc := range []struct {
		args  string
		valid bool
	}{
		{`{"pipeline":"greet","params":{"name":"ann"}}`, true},
		{`{"pipeline":"count_rows"}`, true},
		{`{"pipeline":"greet"}`, false},                                   // required parameter
		{`{"pipeline":"greet","params":{"name":"Ann"}}`, false},           // pattern, matched in full
		{`{"pipeline":"greet","params":{"name":"ann","extra":1}}`, false}, // undeclared parameter
		{`{"pipeline":"nope"}`, false},                                    // not configured
	} {
		inst, err := jsonschema.UnmarshalJSON(strings.NewReader(tc.args))
		must(t, err)
		if got := clientSide.Validate(inst) == nil; got != tc.valid {
			t.Errorf("client-side validation of %s = %v, want %v", tc.args, got, tc.valid)
		}
		var args map[string]any
		must(t, json.Unmarshal([]byte(tc.args), &args))
		res := call(t, c, "run_pipeline", args)
		if serverRefused := code(res) == "INVALID_ARGUMENTS"; serverRefused == tc.valid {
			t.Errorf("server on %s: %s (client-side valid=%v)", tc.args, text(res), tc.valid)
		}
	}
}

// TestPipelineCatalogFollowsReload: a pipeline added by a configuration
// reload is in the schema clients list next.
func TestPipelineCatalogFollowsReload(t *testing.T) {
	f := newFixture(t, "runner")
	path := filepath.Join(f.dir, "airlock.yaml")
	data, err := os.ReadFile(path)
	must(t, err)
	added := string(data) + "  - name: added_later\n    description: Added by a reload.\n    argv: [/bin/true]\n    outputs: [x.txt]\n"
	must(t, os.WriteFile(path, []byte(added), 0o644))
	cfg, err := config.Load(path)
	must(t, err)
	must(t, f.r.Reload(context.Background(), cfg, "test"))
	must(t, f.srv.Reload())
	tool := runPipelineTool(t, f)
	if !strings.Contains(string(tool.InputSchema), `"added_later"`) || !strings.Contains(tool.Description, "added_later") {
		t.Fatalf("reloaded pipeline missing from the declaration: %s", tool.Description)
	}
}
