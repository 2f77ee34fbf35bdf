package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/sources"
)

// Completions (completion/complete) are what a client's argument fields
// autocomplete from, as the inspector does: a pool id and a file path for
// the pool-file resource template, and for the airlock_run_pipeline prompt
// a pipeline name and the enum values of its parameters.
//
// Pool ids and paths come through the runner, as resources/list's do: one
// list_pools call per completion (policy, binding, phase, limits, audit),
// so a completion never names a pool or a file the tools would not show
// this caller; a refused list_pools completes nothing. Pipeline names and
// parameter enums are what run_pipeline's input schema already declares to
// every caller.

// ErrNoCompletion refuses a completion for a prompt, a resource template or
// an argument Airlock does not offer. (mcp-go v1.2.1 answers a provider's
// error with -32603; the spec suggests -32602 for an unknown prompt.)
var ErrNoCompletion = errors.New("nothing to complete")

// Bounds of one completion: the spec caps values at 100; a path completion
// reads one list_pools page of a pool's files (list_pools' largest).
const (
	maxCompletionValues = 100
	maxCompletionFiles  = 1000
)

// completer is mcp-go's completion provider for both kinds of reference.
type completer struct{ s *Server }

var (
	_ mcpserver.PromptCompletionProvider   = completer{}
	_ mcpserver.ResourceCompletionProvider = completer{}
)

// CompleteResourceArgument completes {pool} and {path} of the pool-file
// template; a path needs the pool already chosen (context.arguments.pool).
func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	if uri != sources.FileURITemplate {
		return nil, fmt.Errorf("resource template %.100q: Airlock offers %s only: %w", uri, sources.FileURITemplate, ErrNoCompletion)
	}
	switch arg.Name {
	case "pool":
		var out struct {
			Pools []struct {
				ID string `json:"id"`
			} `json:"pools"`
		}
		ids := []string{}
		if c.listPools(ctx, map[string]any{}, &out) {
			for _, p := range out.Pools {
				ids = append(ids, p.ID)
			}
		}
		return matching(ids, arg.Value, false), nil
	case "path":
		pool := cc.Arguments["pool"]
		if pool == "" {
			return matching(nil, "", false), nil
		}
		var out struct {
			Files []struct {
				Path string `json:"path"`
			} `json:"files"`
			NextOffset int `json:"next_offset"`
		}
		paths := []string{}
		if c.listPools(ctx, map[string]any{"pool": pool, "limit": maxCompletionFiles}, &out) {
			for _, f := range out.Files {
				paths = append(paths, f.Path)
			}
		}
		return matching(paths, arg.Value, out.NextOffset > 0), nil
	}
	return nil, fmt.Errorf("argument %.64q of %s: %w", arg.Name, sources.FileURITemplate, ErrNoCompletion)
}

// listPools runs list_pools with args for the caller; false when there is
// no caller context or the call was refused.
func (c completer) listPools(ctx context.Context, args map[string]any, out any) bool {
	sess, err := c.s.session(ctx)
	if err != nil {
		c.s.log.Debug("completion without a context", "err", err)
		return false
	}
	raw, _ := json.Marshal(args)
	return decodeStructured(sess.Run(ctx, runner.Call{Tool: "list_pools", Args: raw}), out)
}

// CompletePromptArgument completes the arguments of airlock_run_pipeline:
// the pipeline's name, and a parameter's enum values (booleans: true,
// false) — the chosen pipeline's, or every pipeline's with that parameter
// while none is chosen.
func (c completer) CompletePromptArgument(_ context.Context, prompt string, arg mcp.CompleteArgument, cc mcp.CompleteContext) (*mcp.Completion, error) {
	if prompt != pipelinePrompt {
		return nil, fmt.Errorf("prompt %.64q: completions are offered for %s only: %w", prompt, pipelinePrompt, ErrNoCompletion)
	}
	cfg := c.s.r.Config()
	if arg.Name == "pipeline" {
		return matching(pipelineNames(cfg), arg.Value, false), nil
	}
	values, known := []string{}, false
	for _, p := range cfg.Pipelines {
		spec, ok := p.Parameters[arg.Name]
		if !ok || (cc.Arguments["pipeline"] != "" && cc.Arguments["pipeline"] != p.Name) {
			continue
		}
		known = true
		values = append(values, choices(spec)...)
	}
	if !known && !slices.Contains(pipelineParamNames(cfg), arg.Name) {
		return nil, fmt.Errorf("argument %.64q of %s: %w", arg.Name, pipelinePrompt, ErrNoCompletion)
	}
	slices.Sort(values)
	return matching(slices.Compact(values), arg.Value, false), nil
}

// choices are the values a parameter can take, when they are few.
func choices(spec config.Param) []string {
	switch {
	case spec.Type == "boolean":
		return []string{"false", "true"}
	case spec.Type == "string":
		return spec.Enum
	}
	return nil
}

// matching is the completion of prefix among cands (case-insensitively), in
// their order, at most maxCompletionValues; more says cands were cut short.
func matching(cands []string, prefix string, more bool) *mcp.Completion {
	lower := strings.ToLower(prefix)
	values := []string{}
	total := 0
	for _, v := range cands {
		if strings.HasPrefix(strings.ToLower(v), lower) {
			total++
			if len(values) < maxCompletionValues {
				values = append(values, v)
			}
		}
	}
	return &mcp.Completion{Values: values, Total: total, HasMore: more || total > len(values)}
}
