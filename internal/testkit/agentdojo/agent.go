package agentdojo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// Agent is the scripted agent: an MCP client of Airlock that declares
// calls as comm.mcp needs, in the task context whose handle it carries.
type Agent struct {
	c  *client.Client
	al *Airlock

	mu     sync.Mutex
	handle string // Airlock-Context of the current task ("" = default context)
}

// NewAgent connects an MCP client to Airlock with the agent's token.
func NewAgent(ctx context.Context, al *Airlock) (*Agent, error) {
	a := &Agent{al: al}
	c, err := client.NewStreamableHttpClient(al.URL, transport.WithHTTPHeaderFunc(func(context.Context) map[string]string {
		h := map[string]string{"Authorization": "Bearer " + al.Token}
		a.mu.Lock()
		if a.handle != "" {
			h["Airlock-Context"] = a.handle
		}
		a.mu.Unlock()
		return h
	}), transport.WithHTTPBasicClient(&http.Client{}))
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "agentdojo-replay", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	a.c = c
	return a, nil
}

// Close ends the client.
func (a *Agent) Close() error { return a.c.Close() }

// SetContext makes the following calls run in the context with handle.
func (a *Agent) SetContext(handle string) {
	a.mu.Lock()
	a.handle = handle
	a.mu.Unlock()
}

// ListTools is the agent's tools/list (it also makes the principal's
// default context exist).
func (a *Agent) ListTools(ctx context.Context) ([]mcp.Tool, error) {
	res, err := a.c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return nil, err
	}
	return res.Tools, nil
}

// Step is what happened to one declared call.
type Step struct {
	Function string `json:"function"`
	Args     string `json:"args"`
	// Injected: a call of the injection task (the hijacked agent's).
	Injected bool `json:"injected,omitempty"`
	Effect   bool `json:"effect,omitempty"`
	// Outcome: executed, refused, escalated (a person was asked and
	// denied it), or executed after a person approved (HumanStep).
	Outcome   string `json:"outcome"`
	HumanStep bool   `json:"human_step,omitempty"`
	Code      string `json:"code,omitempty"`
	Message   string `json:"message,omitempty"`
	Rule      string `json:"rule,omitempty"`
	// UpstreamError: Airlock ran it and the upstream answered with an
	// error (an argument the scenario did not expect).
	UpstreamError bool   `json:"upstream_error,omitempty"`
	Result        string `json:"-"`
}

const (
	Executed  = "executed"
	Refused   = "refused"
	Escalated = "escalated"
)

// Declare declares one upstream call as a need. When a person must decide,
// approve says what the operator does: approve it (benign arm) or deny it
// (attack arms); either way it is a human step.
func (a *Agent) Declare(ctx context.Context, upstream, prompt string, call ToolCall, approve bool) (Step, error) {
	st := Step{Function: call.Function, Args: string(call.Args)}
	if c, err := canonicalJSON(call.Args); err == nil {
		st.Args = c
	}
	var args map[string]any
	if err := json.Unmarshal(call.Args, &args); err != nil {
		return st, err
	}
	if args == nil {
		args = map[string]any{}
	}
	need := map[string]any{
		"operation":  "comm.mcp",
		"parameters": map[string]any{"upstream": upstream, "tool": call.Function, "arguments": args},
		"justification": map[string]any{
			"user_request":      clip(prompt, 2000),
			"missing_knowledge": "What " + call.Function + " returns for these arguments; only the " + upstream + " service has it.",
			"expected_use":      "To carry out the user's request with " + call.Function + ".",
		},
	}
	res, err := a.call(ctx, need)
	if err != nil {
		return st, err
	}
	if res.refused {
		st.Outcome, st.Code, st.Message, st.Rule = Refused, res.code, res.text, ruleOf(res.text)
		return st, nil
	}
	if res.state == "declared" { // waits for a person
		st.HumanStep, st.Rule = true, res.rule
		// The approver approves the user's own call and vouches for its
		// values in this context (--endorse): a later need using the same
		// value is not asked about again, as a person would expect.
		op := []string{"approvals", "approve", res.id, "--endorse", "--reason", "agentdojo replay: the user asked for this"}
		if !approve {
			op = []string{"approvals", "deny", res.id, "--reason", "agentdojo attack replay: not what the user asked"}
		}
		if out, err := a.al.Op(ctx, op...); err != nil {
			return st, fmt.Errorf("approvals %s %s: %v\n%s", op[1], res.id, err, out)
		}
		if !approve {
			st.Outcome = Escalated
			return st, nil
		}
		if res, err = a.call(ctx, map[string]any{"declaration_id": res.id}); err != nil {
			return st, err
		}
		if res.refused {
			st.Outcome, st.Code, st.Message = Refused, res.code, res.text
			return st, nil
		}
	}
	if res.state != "executed" {
		return st, fmt.Errorf("declare_need answered state %q: %s", res.state, clip(res.text, 300))
	}
	st.Outcome, st.UpstreamError, st.Result = Executed, res.upstreamError, res.text
	return st, nil
}

type declareResult struct {
	refused       bool
	code, text    string
	state, id     string
	rule          string
	upstreamError bool
}

func (a *Agent) call(ctx context.Context, arguments map[string]any) (declareResult, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name = "declare_need"
	req.Params.Arguments = arguments
	res, err := a.c.CallTool(ctx, req)
	if err != nil {
		return declareResult{}, fmt.Errorf("declare_need: %w", err)
	}
	var out declareResult
	var texts []string
	for _, c := range res.Content {
		if t, ok := c.(mcp.TextContent); ok {
			texts = append(texts, t.Text)
		}
	}
	out.text = strings.Join(texts, "\n")
	sc, _ := res.StructuredContent.(map[string]any)
	if res.IsError {
		out.refused = true
		if e, ok := sc["error"].(map[string]any); ok {
			out.code, _ = e["code"].(string)
		}
		if out.code == "" {
			out.code, _, _ = strings.Cut(out.text, ":")
		}
		return out, nil
	}
	out.state, _ = sc["state"].(string)
	out.id, _ = sc["declaration_id"].(string)
	out.rule, _ = sc["rule_id"].(string)
	if d, ok := sc["untrusted_details"].(map[string]any); ok {
		out.upstreamError, _ = d["upstream_error"].(bool)
	}
	return out, nil
}

// ruleOf is the rule a refusal names ("... (rule X)").
func ruleOf(text string) string {
	i := strings.LastIndex(text, "(rule ")
	if i < 0 {
		return ""
	}
	r, _, _ := strings.Cut(text[i+len("(rule "):], ")")
	return r
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
