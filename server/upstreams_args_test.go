package server

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// bindTools adds three tools to u whose handlers bind their arguments into
// Go structs with encoding/json, as typed mcp-go handlers (and most Go MCP
// servers) do: a member matches a field case-insensitively, with Unicode
// simple folding. bind's schema names message and limit; bind_nested's
// names opts.limit; bind_open's names q and explicitly allows other keys.
// None sets additionalProperties false. Each answers with what it bound.
func bindTools(u *testUpstream) {
	type flat struct {
		Message string `json:"message"`
		Limit   int    `json:"limit"`
	}
	u.mcp.AddTool(mcp.NewTool("bind", mcp.WithDescription("Binds message and limit."), mcp.WithString("message"), mcp.WithNumber("limit")),
		mcp.NewTypedToolHandler(func(_ context.Context, _ mcp.CallToolRequest, a flat) (*mcp.CallToolResult, error) {
			u.calls.Add(1)
			return mcp.NewToolResultText(fmt.Sprintf("bound message=%q limit=%d", a.Message, a.Limit)), nil
		}))
	type nested struct {
		Opts struct {
			Limit int `json:"limit"`
		} `json:"opts"`
	}
	u.mcp.AddTool(mcp.NewToolWithRawSchema("bind_nested", "Binds opts.limit.",
		json.RawMessage(`{"type":"object","properties":{"opts":{"type":"object","properties":{"limit":{"type":"number"}}}}}`)),
		mcp.NewTypedToolHandler(func(_ context.Context, _ mcp.CallToolRequest, a nested) (*mcp.CallToolResult, error) {
			u.calls.Add(1)
			return mcp.NewToolResultText(fmt.Sprintf("bound limit=%d", a.Opts.Limit)), nil
		}))
	type open struct {
		Q     string `json:"q"`
		Limit int    `json:"limit"`
	}
	u.mcp.AddTool(mcp.NewToolWithRawSchema("bind_open", "Binds q and whatever else it is given.",
		json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"additionalProperties":true}`)),
		mcp.NewTypedToolHandler(func(_ context.Context, _ mcp.CallToolRequest, a open) (*mcp.CallToolResult, error) {
			u.calls.Add(1)
			return mcp.NewToolResultText(fmt.Sprintf("bound q=%q limit=%d", a.Q, a.Limit)), nil
		}))
}

// bindApproved is upstreamFixture for role with bindTools approved.
func bindApproved(t *testing.T, role string) (*fixture, *testUpstream) {
	t.Helper()
	f, u := upstreamFixture(t, role)
	bindTools(u)
	pins := f.review(t)
	for _, tool := range []string{"bind", "bind_nested", "bind_open"} {
		must(t, f.approveTool(t, tool, pins[tool].SeenDigest))
	}
	return f, u
}

// TestUpstreamArgumentNotInSchema (issue 26, item 1): the policy denies
// message "secret" and a limit over 100 by exact key; an upstream binding
// into a struct reads "Message", "LIMIT" or "meſſage" as the same field. A
// need whose arguments hold a key the pinned input schema does not name,
// spelt exactly — at the top or in a nested object the schema describes —
// is refused with UPSTREAM_ARGUMENTS_INVALID naming the key (quoted and
// escaped), audited, and never reaches the upstream. The key is judged
// after JSON decoding: an escaped spelling of a named key is that key, and
// a key twice (or twice up to case) is refused as before.
func TestUpstreamArgumentNotInSchema(t *testing.T) {
	f, u := bindApproved(t, "mcper")
	c := f.connect(t)
	need := func(tool string, args any) map[string]any {
		n := mcpNeed(tool, nil)
		n["parameters"].(map[string]any)["arguments"] = args
		return n
	}
	for _, tc := range []struct {
		name, tool string
		args       any
		code, key  string // key: the quoted key the refusal names
	}{
		{"issue", "bind", map[string]any{"Message": "secret", "LIMIT": 5000}, "UPSTREAM_ARGUMENTS_INVALID", `"LIMIT"`},
		{"one in case", "bind", map[string]any{"message": "hi", "Limit": 5000}, "UPSTREAM_ARGUMENTS_INVALID", `"Limit"`},
		{"upper", "bind", map[string]any{"MESSAGE": "secret"}, "UPSTREAM_ARGUMENTS_INVALID", `"MESSAGE"`},
		{"long s alone", "bind", map[string]any{"me\u017f\u017fage": "secret"}, "UPSTREAM_ARGUMENTS_INVALID", `"me\u017f\u017fage"`},
		{"kelvin", "bind", map[string]any{"\u212aey": 1, "message": "hi"}, "UPSTREAM_ARGUMENTS_INVALID", `"\u212aey"`},
		{"zero width", "bind", map[string]any{"message\u200b": "secret"}, "UPSTREAM_ARGUMENTS_INVALID", `"message\u200b"`},
		{"escaped upper", "bind", json.RawMessage(`{"\u004dessage":"secret"}`), "UPSTREAM_ARGUMENTS_INVALID", `"Message"`},
		{"nested", "bind_nested", map[string]any{"opts": map[string]any{"LIMIT": 5000}}, "UPSTREAM_ARGUMENTS_INVALID", `"LIMIT" in "/opts"`},
		{"open schema, no opt-in", "bind_open", map[string]any{"q": "x", "Limit": 5000}, "UPSTREAM_ARGUMENTS_INVALID", `"Limit"`},
		{"duplicate", "bind", json.RawMessage(`{"message":"hi","message":"secret"}`), "INVALID_ARGUMENTS", ""},
		{"duplicate in case", "bind", json.RawMessage(`{"message":"hi","Message":"secret"}`), "INVALID_ARGUMENTS", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, c, "declare_need", need(tc.tool, tc.args))
			if code(res) != tc.code || !strings.Contains(text(res), tc.key) || strings.Contains(text(res), "bound") {
				t.Fatalf("%v: %s", tc.args, text(res))
			}
		})
	}
	if n := u.calls.Load(); n != 0 {
		t.Fatalf("refused needs reached the upstream %d times", n)
	}
	var audited bool
	for _, r := range f.auditRecords(t) {
		audited = audited || (r.Violation == "UPSTREAM_ARGUMENTS_INVALID" && strings.Contains(r.Error, "argument not named by the pinned input schema") && strings.Contains(r.Reason, `"LIMIT"`))
	}
	if !audited {
		t.Fatal("no audit record names the refused key")
	}
	// What the schema names, spelt as it spells it, goes through (an
	// escaped spelling is the same key once decoded, and is sent
	// re-encoded), and the rules judge what the upstream binds.
	for _, tc := range []struct {
		tool string
		args any
		want string
	}{
		{"bind", map[string]any{"message": "hi", "limit": 5}, `bound message="hi" limit=5`},
		{"bind", json.RawMessage(`{"\u006dessage":"hi"}`), `bound message="hi" limit=0`},
		{"bind_nested", map[string]any{"opts": map[string]any{"limit": 7}}, "bound limit=7"},
		{"bind_open", map[string]any{"q": "x"}, `bound q="x" limit=0`},
	} {
		if res := call(t, c, "declare_need", need(tc.tool, tc.args)); res.IsError || !strings.Contains(text(res), tc.want) {
			t.Fatalf("%s %v: %s", tc.tool, tc.args, text(res))
		}
	}
	for _, args := range []map[string]any{{"message": "secret"}, {"limit": 5000}} {
		if res := call(t, c, "declare_need", need("bind", args)); code(res) != "POLICY_DENIED" {
			t.Fatalf("%v: %s", args, text(res))
		}
	}
	if res := call(t, c, "declare_need", need("bind_nested", map[string]any{"opts": map[string]any{"limit": 5000}})); code(res) != "POLICY_DENIED" {
		t.Fatalf("nested rule: %s", text(res))
	}
}

// TestUpstreamAdditionalArgumentsOptIn: a key the schema does not name
// passes only where the schema explicitly allows other keys and the
// caller's policy opts in (mcp_additional_arguments); the opt-in alone
// does not open a schema that is silent about other keys.
func TestUpstreamAdditionalArgumentsOptIn(t *testing.T) {
	f, u := bindApproved(t, "mcp-extra")
	c := f.connect(t)
	n := mcpNeed("bind_open", map[string]any{"q": "x", "limit": 5000})
	if res := call(t, c, "declare_need", n); res.IsError || !strings.Contains(text(res), `bound q="x" limit=5000`) {
		t.Fatalf("opted in, schema open: %s", text(res))
	}
	n = mcpNeed("bind", map[string]any{"Message": "secret"})
	if res := call(t, c, "declare_need", n); code(res) != "UPSTREAM_ARGUMENTS_INVALID" || u.calls.Load() != 1 {
		t.Fatalf("opted in, schema silent: %s", text(res))
	}
}

var auditSeq = regexp.MustCompile(`"airlock/audit_seq":\d+`)

// TestUpstreamDeniedRoleLearnsNothing (issue 26, item 6): a role whose
// policy cannot list an upstream's tools — no mcp.* allow, or an allow
// whose network section refuses the upstream's host — gets the same
// POLICY_DENIED, byte for byte, for a tool nobody reviewed, one pending
// review, one approved, one the upstream does not have, and with
// arguments the pinned schema would refuse: nothing tells it which tools
// exist, which are pending or what arguments they take. Each refusal is
// audited as the policy step's own (capability, decision, rule).
func TestUpstreamDeniedRoleLearnsNothing(t *testing.T) {
	for _, role := range []string{"mcp-denied", "mcp-offnet-exec"} {
		t.Run(role, func(t *testing.T) {
			f, u := upstreamFixture(t, role)
			c := f.connect(t)
			answer := func(tool string, args map[string]any) string {
				t.Helper()
				res := call(t, c, "declare_need", mcpNeed(tool, args))
				if code(res) != "POLICY_DENIED" {
					t.Fatalf("%s %v: %s", tool, args, text(res))
				}
				b, err := json.Marshal(res)
				must(t, err)
				// The tool's own name and the audit record's sequence
				// number (an id) are the only differences allowed.
				return auditSeq.ReplaceAllString(strings.ReplaceAll(string(b), tool, "TOOL"), "SEQ")
			}
			hi := map[string]any{"message": "hi"}
			bad := map[string]any{"message": strings.Repeat("a", 41), "Other": 1}
			want := answer("echo", hi) // never reviewed
			got := map[string]string{"unknown bad args": answer("echo", bad), "absent": answer("no_such_tool", hi)}
			pins := f.review(t)
			got["pending"], got["pending bad args"] = answer("echo", hi), answer("echo", bad)
			must(t, f.approveTool(t, "echo", pins["echo"].SeenDigest))
			got["approved"], got["approved bad args"] = answer("echo", hi), answer("echo", bad)
			got["absent after review"] = answer("no_such_tool", hi)
			for state, g := range got {
				if g != want {
					t.Errorf("%s:\n%s\nwant\n%s", state, g, want)
				}
			}
			if !regexp.MustCompile(`mcp\.up\.TOOL is denied by policy \(rule (default|network)\)`).MatchString(want) {
				t.Errorf("refusal: %s", want)
			}
			if n := u.calls.Load(); n != 0 {
				t.Fatalf("the upstream was called %d times", n)
			}
			// Audited as the policy step records a denial.
			var audited int
			for _, r := range f.toolRecords(t, "declare_need", "POLICY_DENIED") {
				if r.Capability == "mcp.up.echo" && r.Decision == "deny" && (r.RuleID == "default" || r.RuleID == "network") {
					audited++
				}
			}
			if audited != 6 {
				t.Fatalf("%d of the 6 refusals of echo audited with their rule", audited)
			}
		})
	}
}
