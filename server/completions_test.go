package server

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/sources"
)

// reportPipeline adds a pipeline with an enum and a boolean parameter to
// testConfig's pipelines.
const reportPipeline = `  - name: report
    description: A report for one region.
    argv: [/bin/true]
    outputs: [x.txt]
    parameters:
      region: {type: string, enum: [north, south, east, west], description: Only this region.}
      detailed: {type: boolean}
`

func complete(t *testing.T, c *client.Client, ref any, arg string, value string, ctxArgs map[string]string) (*mcp.CompleteResult, error) {
	t.Helper()
	req := mcp.CompleteRequest{}
	req.Params.Ref = ref
	req.Params.Argument = mcp.CompleteArgument{Name: arg, Value: value}
	req.Params.Context = mcp.CompleteContext{Arguments: ctxArgs}
	return c.Complete(context.Background(), req)
}

// TestCompletions (issue 24 item 2): completion/complete is offered, over
// both protocol revisions with the mcp-go client on loopback HTTP, for the
// pool-file template's {pool} and {path} — read through the runner, so only
// the caller's bound pools and their files, never a configured pool it does
// not bind — and for airlock_run_pipeline's pipeline name and enum values.
// A prompt or template Airlock does not offer is refused, naming it.
func TestCompletions(t *testing.T) {
	w := webFixtureConfig(t, fmt.Sprintf(testConfig, "local")+reportPipeline)
	template := mcp.ResourceReference{Type: "ref/resource", URI: sources.FileURITemplate}
	prompt := mcp.PromptReference{Type: "ref/prompt", Name: pipelinePrompt}
	cases := []struct {
		name    string
		ref     any
		arg     string
		value   string
		ctxArgs map[string]string
		want    []string // nil with err: refused
		err     string
	}{
		{"bound pools", template, "pool", "", nil, []string{"alpha"}, ""},
		{"pool prefix", template, "pool", "AL", nil, []string{"alpha"}, ""},
		{"a configured pool it does not bind", template, "pool", "gam", nil, []string{}, ""},
		{"paths of the chosen pool", template, "path", "data/", map[string]string{"pool": "alpha"}, []string{"data/rows.csv"}, ""},
		{"paths of an unbound pool", template, "path", "", map[string]string{"pool": "gamma"}, []string{}, ""},
		{"path before a pool", template, "path", "h", nil, []string{}, ""},
		{"pipeline names", prompt, "pipeline", "r", nil, []string{"report"}, ""},
		{"enum of the chosen pipeline", prompt, "region", "", map[string]string{"pipeline": "report"}, []string{"east", "north", "south", "west"}, ""},
		{"enum prefix, no pipeline chosen", prompt, "region", "so", nil, []string{"south"}, ""},
		{"boolean", prompt, "detailed", "t", nil, []string{"true"}, ""},
		{"a parameter the chosen pipeline lacks", prompt, "region", "", map[string]string{"pipeline": "count_rows"}, []string{}, ""},
		{"unknown argument", prompt, "nope", "", nil, nil, `"nope"`},
		{"another prompt", mcp.PromptReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}, "arg1", "test", nil, nil, "test_prompt_with_arguments"},
		{"another template", mcp.ResourceReference{Type: "ref/resource", URI: "test://template/{id}/data"}, "id", "", nil, nil, "test://template/{id}/data"},
	}
	for _, version := range []string{mcp.LATEST_LEGACY_PROTOCOL_VERSION, modernVersion} {
		c := w.mcpClient(t, "agent", nil, version)
		for _, tc := range cases {
			t.Run(version+"/"+tc.name, func(t *testing.T) {
				res, err := complete(t, c, tc.ref, tc.arg, tc.value, tc.ctxArgs)
				if tc.want == nil {
					if err == nil || !strings.Contains(err.Error(), tc.err) {
						t.Fatalf("err = %v, want a refusal naming %s", err, tc.err)
					}
					return
				}
				must(t, err)
				if !slices.Equal(res.Completion.Values, tc.want) {
					t.Fatalf("values %q, want %q", res.Completion.Values, tc.want)
				}
			})
		}
	}
	// The completion of an unbound pool's paths was the runner's refusal,
	// audited like any list_pools call.
	if len(w.toolRecords(t, "list_pools", "POOL_NOT_SELECTED")) != 2 {
		t.Fatalf("the unbound pool's completions are not audited refusals: %+v", w.toolRecords(t, "list_pools", "POOL_NOT_SELECTED"))
	}
}

// TestPipelinePrompt: airlock_run_pipeline turns the person's choices into
// run_pipeline's exact arguments, typed and JSON-encoded; an unknown
// pipeline, a parameter the pipeline lacks and a value of the wrong type
// are refused. Its arguments follow a reload.
func TestPipelinePrompt(t *testing.T) {
	w := webFixtureConfig(t, fmt.Sprintf(testConfig, "local")+reportPipeline)
	c := w.mcpClient(t, "agent", nil, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	get := func(args map[string]string) (*mcp.GetPromptResult, error) {
		req := mcp.GetPromptRequest{}
		req.Params.Name, req.Params.Arguments = pipelinePrompt, args
		return c.GetPrompt(context.Background(), req)
	}
	res, err := get(map[string]string{"pipeline": "report", "region": `north", "x": "y`, "detailed": "true"})
	must(t, err)
	got := res.Messages[0].Content.(mcp.TextContent).Text
	if !strings.Contains(got, `arguments {"params":{"detailed":true,"region":"north\", \"x\": \"y"},"pipeline":"report"}`) {
		t.Fatalf("prompt text: %s", got)
	}
	for _, bad := range []map[string]string{
		{"pipeline": "nope"},
		{"pipeline": "count_rows", "region": "north"},
		{"pipeline": "report", "detailed": "maybe"},
	} {
		if _, err := get(bad); err == nil {
			t.Errorf("%v: accepted", bad)
		}
	}
	list, err := c.ListPrompts(context.Background(), mcp.ListPromptsRequest{})
	must(t, err)
	i := slices.IndexFunc(list.Prompts, func(p mcp.Prompt) bool { return p.Name == pipelinePrompt })
	if i < 0 {
		t.Fatalf("prompts: %+v", list.Prompts)
	}
	var args []string
	for _, a := range list.Prompts[i].Arguments {
		args = append(args, a.Name)
	}
	if !slices.Equal(args, []string{"pipeline", "detailed", "name", "path", "port", "region"}) {
		t.Fatalf("arguments %v", args)
	}
	reloadWithPipeline(t, w.fixture, "added_later")
	list, err = c.ListPrompts(context.Background(), mcp.ListPromptsRequest{})
	must(t, err)
	i = slices.IndexFunc(list.Prompts, func(p mcp.Prompt) bool { return p.Name == pipelinePrompt })
	if i < 0 || !strings.Contains(list.Prompts[i].Arguments[0].Description, "added_later") {
		t.Fatalf("after the reload: %+v", list.Prompts)
	}
}
