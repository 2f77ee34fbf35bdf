package server

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// The readers scene of issue 22: an upstream only alice may read from
// (readers: [alice@corp.example]) answers with her payroll note; the
// policy says content goes only to its readers, naming no address.
const (
	payrollIBAN = "DE02120300000000202051"
	payrollNote = "Salary for March is paid to " + payrollIBAN + " on the 28th.\n"
)

const readersPolicy = `  readers:
    allow: ["pool.*", "mcp.up.*"]
    network: {allow_hosts: ["127.0.0.1"], allow_schemes: [http], allow_private: ["127.0.0.0/8"]}
    rules:
      - {id: body-not-for-recipient, capability: mcp.up.send_email, effect: deny,
         when: '!readable_by(provenance.body, args.parameters.arguments.recipient)'}
`

// TestProvenanceReadersStopSendingToOthers: the note read from alice's
// upstream may be mailed to alice (in any ASCII case) but not to bob
// (PROVENANCE_DENIED, never reaching the upstream); a body the agent wrote
// itself goes to anyone. The label in the store and in the audit record
// carries the readers, and the denial's record the body's readers.
func TestProvenanceReadersStopSendingToOthers(t *testing.T) {
	cfg, u := upstreamConfig(t, "mailer", "    readers: [alice@corp.example]\n")
	cfg = strings.Replace(cfg, "policies:\n", "policies:\n"+readersPolicy, 1)
	cfg = strings.Replace(cfg, "roles:\n", "roles:\n  mailer: {policy: readers, pools: [alpha, beta], initial_phase: execution}\n", 1)
	var sent atomic.Int64
	u.mcp.AddTool(mcp.NewTool("send_email", mcp.WithDescription("Sends an e-mail."),
		mcp.WithString("recipient", mcp.Required()), mcp.WithString("body", mcp.Required())),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			sent.Add(1)
			return mcp.NewToolResultText("sent"), nil
		})
	u.mcp.AddTool(mcp.NewTool("get_note", mcp.WithDescription("Reads alice's note.")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(payrollNote), nil
		})
	f := newFixtureConfig(t, cfg)
	pins := f.review(t)
	for _, tool := range []string{"send_email", "get_note"} {
		must(t, f.approveTool(t, tool, pins[tool].SeenDigest))
	}
	call(t, f.connect(t), "list_pools", nil)
	op, err := operator.Open(f.state, false)
	must(t, err)
	cx, handle, err := op.CreateChild(context.Background(), f.cfg, operator.ChildSpec{Parent: f.localDefault(), Phase: contexts.PhaseExecution, Task: "Forward my payroll note.\n"}, "tester", "readers")
	op.Close()
	must(t, err)
	cc := f.child(t, f.r, handle)

	if res := cc.call(t, "declare_need", mcpNeed("get_note", nil)); res.IsError || !strings.Contains(text(res), payrollIBAN) {
		t.Fatalf("get_note: %s", text(res))
	}
	email := func(to, body string) map[string]any {
		return mcpNeed("send_email", map[string]any{"recipient": to, "body": body})
	}
	wantCode(t, cc.call(t, "declare_need", email("bob@else.example", "Here it is: "+payrollIBAN)), "PROVENANCE_DENIED")
	wantCode(t, cc.call(t, "declare_need", email("\u0430lice@corp.example", "Here it is: "+payrollIBAN)), "PROVENANCE_DENIED")
	if n := sent.Load(); n != 0 {
		t.Fatalf("send_email reached the upstream %d times, want 0", n)
	}
	for _, to := range []string{"alice@corp.example", "Alice@Corp.Example"} {
		if res := cc.call(t, "declare_need", email(to, "Here it is: "+payrollIBAN)); res.IsError || !strings.Contains(text(res), "sent") {
			t.Fatalf("to %s, a reader: %s", to, text(res))
		}
	}
	if res := cc.call(t, "declare_need", email("bob@else.example", "Lunch on Friday?")); res.IsError {
		t.Fatalf("the agent's own body to bob: %s", text(res))
	}
	if n := sent.Load(); n != 3 {
		t.Fatalf("send_email reached the upstream %d times, want 3", n)
	}

	// The label in the store carries the upstream's readers.
	op, err = operator.Open(f.state, true)
	must(t, err)
	defer op.Close()
	p, err := op.ContextProvenance(context.Background(), cx.ID)
	must(t, err)
	var labelled bool
	for _, l := range p.Content {
		if strings.Contains(l.Text, payrollIBAN) {
			labelled = slices.Equal(l.Readers, []string{"alice@corp.example"})
		}
	}
	if !labelled {
		t.Fatalf("no label of the note with readers [alice@corp.example]: %+v", p.Content)
	}
	var recorded, denied bool
	for _, r := range f.auditRecords(t) {
		var extra struct {
			Provenance []struct {
				Arg     string
				Readers []string
			}
			Labels []struct{ Readers []string }
		}
		if len(r.Extra) > 0 {
			must(t, json.Unmarshal(r.Extra, &extra))
		}
		for _, l := range extra.Labels {
			recorded = recorded || slices.Equal(l.Readers, []string{"alice@corp.example"})
		}
		for _, a := range extra.Provenance {
			if a.Arg == "body" && r.Violation == "PROVENANCE_DENIED" && r.RuleID == "body-not-for-recipient" {
				denied = slices.Equal(a.Readers, []string{"alice@corp.example"})
			}
		}
	}
	if !recorded || !denied {
		t.Fatalf("audit: label with readers %v, denial with the body's readers %v", recorded, denied)
	}
	if v, err := op.Verify(context.Background()); err != nil || !v.OK {
		t.Fatalf("audit verify: %+v %v", v, err)
	}
}
