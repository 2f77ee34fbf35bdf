package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/execution/provtrace"
	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// Endorsement (issue 22 item 5): an approver vouches for a value once, in
// one context; later needs of that context using it pass the provenance
// rule without asking again. Single-context, approver-only, audited.

// agentIBAN is a recipient found nowhere: the agent's own.
const agentIBAN = "FR1420041010050500013M02606"

// endorseFixture is provFixture with the role's approver set (operator or
// client; "" keeps the stdio default, client). It returns the fixture,
// the child context's id and handle, and the upstream's send counter.
func endorseFixture(t *testing.T, approver string) (*fixture, string, string, *atomic.Int64) {
	t.Helper()
	role := payerRole
	if approver != "" {
		role = strings.Replace(role, "}", ", approver: "+approver+"}", 1)
	}
	f, sent := bankFixture(t, provPolicy, role, "", "send_money", "get_transactions")
	cx, handle := f.newChild(t, f.localDefault(), provTask)
	return f, cx, handle, sent
}

// newChild creates a child context of parent in execution, with task as
// its trusted input when set.
func (f *fixture) newChild(t *testing.T, parent, task string) (string, string) {
	t.Helper()
	return f.createChild(t, operator.ChildSpec{Parent: parent, Phase: contexts.PhaseExecution, Task: task})
}

// operator opens the state as the CLI does, for one step.
func (f *fixture) operator(t *testing.T) *operator.API {
	t.Helper()
	op, err := operator.Open(f.state, false)
	must(t, err)
	t.Cleanup(func() { op.Close() })
	return op
}

// endorseRecords are the audit's context.endorse records.
func endorseRecords(t *testing.T, f *fixture) []audit.Record {
	t.Helper()
	var out []audit.Record
	for _, r := range f.auditRecords(t) {
		if r.Capability == provtrace.EndorseCapability {
			out = append(out, r)
		}
	}
	return out
}

func pendingID(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res.IsError || !strings.Contains(text(res), "needs approval") {
		t.Fatalf("want a need waiting for approval: %s", text(res))
	}
	return structured(t, res)["declaration_id"].(string)
}

// TestEndorsementAudited: the operator approves an agent-written recipient
// with endorsement (`airlock approvals approve ID --endorse`); the agent
// collects it; a later payment to the same recipient in the context passes
// without a person. The act is one context.endorse record naming the
// context, the declaration, the argument and its value's HMAC (never the
// value), who and why; audit verify covers it.
func TestEndorsementAudited(t *testing.T) {
	f, cx, handle, sent := endorseFixture(t, "operator")
	cc := f.child(t, f.r, handle)
	id := pendingID(t, cc.call(t, "declare_need", sendMoney(agentIBAN, 5)))

	op := f.operator(t)
	d, err := op.Approvals(context.Background(), false)
	must(t, err)
	args, err := op.NeedProvenance(context.Background(), d[0])
	must(t, err)
	if len(args) != 2 || args[1].Name != "recipient" || args[1].Origin != "agent" || !strings.Contains(args[1].Line(), `"`+agentIBAN+`"`) {
		t.Fatalf("the approver's view of the need: %+v", args)
	}
	_, rows, err := op.ApproveAndEndorse(context.Background(), id, "alice", "the landlord's new bank")
	must(t, err)
	if len(rows) != 2 { // the recipient and the amount, both the agent's
		t.Fatalf("endorsed %d values, want 2: %+v", len(rows), rows)
	}
	if res := cc.call(t, "declare_need", map[string]any{"declaration_id": id}); res.IsError || !strings.Contains(text(res), "sent") {
		t.Fatalf("collecting the approved need: %s", text(res))
	}
	// Later, in the same context, respelt: endorsed, no person asked.
	if res := cc.call(t, "declare_need", sendMoney("fr14 2004 1010 0505 0001 3m02 606", 5)); res.IsError || !strings.Contains(text(res), "sent") {
		t.Fatalf("the endorsed recipient was not let through: %s", text(res))
	}
	if n := sent.Load(); n != 2 {
		t.Fatalf("send_money reached the upstream %d times, want 2", n)
	}
	recs := endorseRecords(t, f)
	if len(recs) != 1 {
		t.Fatalf("%d context.endorse records, want 1", len(recs))
	}
	r := recs[0]
	var extra struct {
		DeclarationID string `json:"declaration_id"`
		Endorsed      []struct {
			Arg, ID   string
			ValueHMAC string `json:"value_hmac"`
		}
	}
	must(t, json.Unmarshal(r.Extra, &extra))
	if r.ContextID != cx || r.Principal != "operator:alice" || r.Reason != "the landlord's new bank" || r.Outcome != "ok" ||
		extra.DeclarationID != id || len(extra.Endorsed) != 2 || extra.Endorsed[1].Arg != "recipient" || !strings.HasPrefix(extra.Endorsed[1].ValueHMAC, "hmac-sha256:") {
		t.Fatalf("endorsement record: %+v %s", r, r.Extra)
	}
	for _, r := range f.auditRecords(t) {
		if r.Capability == provtrace.EndorseCapability && strings.Contains(string(r.Extra), agentIBAN) {
			t.Fatalf("the endorsed value in the clear: %s", r.Extra)
		}
	}
	// The call that used the endorsement says so in its own record.
	var used bool
	for _, r := range f.auditRecords(t) {
		used = used || (r.Outcome == "ok" && strings.Contains(string(r.Extra), `"origin":"endorsed"`))
	}
	if !used {
		t.Fatal("no call record shows an endorsed argument")
	}
	f.verifyAudit(t)
}

// TestEndorsementSingleContext: a value endorsed up front in one child
// context (`airlock context endorse`) passes there only: not in its
// sibling, not in its parent, not in its own child.
func TestEndorsementSingleContext(t *testing.T) {
	f, cx, handle, sent := endorseFixture(t, "operator")
	sibling, siblingHandle := f.newChild(t, f.localDefault(), provTask)
	_, grandchildHandle := f.newChild(t, cx, "")
	if _, err := f.operator(t).Endorse(context.Background(), cx, agentIBAN, "alice", "the orchestrator checked it"); err != nil {
		t.Fatal(err)
	}
	if res := f.child(t, f.r, handle).call(t, "declare_need", sendMoney(agentIBAN, 5)); res.IsError || !strings.Contains(text(res), "sent") {
		t.Fatalf("in the endorsing context: %s", text(res))
	}
	for name, h := range map[string]string{"sibling " + sibling: siblingHandle, "child": grandchildHandle} {
		if res := f.child(t, f.r, h).call(t, "declare_need", sendMoney(agentIBAN, 5)); !strings.Contains(text(res), "needs approval") {
			t.Fatalf("%s saw the endorsement: %s", name, text(res))
		}
	}
	if res := call(t, f.connect(t), "declare_need", sendMoney(agentIBAN, 5)); !strings.Contains(text(res), "needs approval") {
		t.Fatalf("the parent saw the endorsement: %s", text(res))
	}
	if n := sent.Load(); n != 1 {
		t.Fatalf("send_money reached the upstream %d times, want 1", n)
	}
	if recs := endorseRecords(t, f); len(recs) != 1 || recs[0].ContextID != cx {
		t.Fatalf("endorsement records: %+v", recs)
	}
}

// questionElicitor answers the approval question with its content and
// keeps the question.
type questionElicitor struct {
	content map[string]any
	asked   []string
}

func (e *questionElicitor) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	e.asked = append(e.asked, req.Params.Message)
	res := &mcp.ElicitationResult{}
	res.Action = mcp.ElicitationResponseActionAccept
	res.Content = e.content
	return res, nil
}

// TestEndorseByClientApprover: where the role names the client as the
// approver, the person at the client is asked with each argument's
// provenance in the question (quoted, source named) and may tick
// "endorse"; the next payment to that recipient is not asked about.
func TestEndorseByClientApprover(t *testing.T) {
	f, cx, handle, sent := endorseFixture(t, "client")
	cc := f.child(t, f.r, handle)
	e := &questionElicitor{content: map[string]any{"decision": "approve", "endorse": true}}
	c := cc.f.connectWith(t, client.WithElicitationHandler(e))
	callOK(t, c, "declare_need", mcpNeed("get_transactions", nil))
	// The attacker's IBAN respelt past the deny rule is still untrusted;
	// use the agent's own one: asked, endorsed, sent.
	if res := call(t, c, "declare_need", sendMoney(agentIBAN, 5)); res.IsError || !strings.Contains(text(res), "sent") {
		t.Fatalf("approved by the person: %s", text(res))
	}
	if len(e.asked) != 1 || !strings.Contains(e.asked[0], `"recipient" = "`+agentIBAN+`" ("iban"): the agent's own`) {
		t.Fatalf("the question does not show the recipient's provenance: %q", e.asked)
	}
	if res := call(t, c, "declare_need", sendMoney(agentIBAN, 5)); res.IsError || !strings.Contains(text(res), "sent") || len(e.asked) != 1 {
		t.Fatalf("asked again (%d) or refused: %s", len(e.asked), text(res))
	}
	if n := sent.Load(); n != 2 {
		t.Fatalf("send_money reached the upstream %d times, want 2", n)
	}
	recs := endorseRecords(t, f)
	if len(recs) != 1 || recs[0].ContextID != cx || !strings.HasPrefix(recs[0].Principal, "elicitation:") {
		t.Fatalf("endorsement records: %+v", recs)
	}
}

// TestEndorseRefusedFromNonApprover: nobody but the approver endorses. An
// answer the server never asked for (forged: made up, or with no state)
// carrying "endorse" is APPROVAL_INVALID; a role whose approver is the
// operator never asks the client, and an answer its client sends anyway is
// refused. No endorsement is stored and the need still waits.
func TestEndorseRefusedFromNonApprover(t *testing.T) {
	endorseAnswer := mcp.InputResponses{"approve": mcp.NewElicitationInputResponse(mcp.ElicitationResult{
		ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": "approve", "endorse": true}},
	})}
	forged := []map[string]any{
		{"inputResponses": endorseAnswer},
		{"requestState": "alc1.eyJkIjoiZGVjbF94In0.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "inputResponses": endorseAnswer},
	}
	for _, approver := range []string{"client", "operator"} {
		t.Run(approver, func(t *testing.T) {
			f, cx, handle, sent := endorseFixture(t, approver)
			cc := f.child(t, f.r, handle)
			e := &questionElicitor{content: map[string]any{"decision": "approve", "endorse": true}}
			c := cc.f.connect(t)
			if approver == "operator" {
				// The client can elicit, but it is not the approver: it is
				// never asked, and its answer does not count.
				c = cc.f.connectWith(t, client.WithElicitationHandler(e))
				pendingID(t, call(t, c, "declare_need", sendMoney(agentIBAN, 5)))
			}
			for _, extra := range forged {
				wantCode(t, rawCall(t, c, callParams("declare_need", sendMoney(agentIBAN, 5), extra)), approvalInvalid)
			}
			if len(e.asked) != 0 || sent.Load() != 0 || len(endorseRecords(t, f)) != 0 {
				t.Fatalf("asked %d, sent %d, endorsement records %d", len(e.asked), sent.Load(), len(endorseRecords(t, f)))
			}
			p, err := f.operator(t).ContextProvenance(context.Background(), cx)
			must(t, err)
			if len(p.Endorsements) != 0 {
				t.Fatalf("endorsed: %+v", p.Endorsements)
			}
		})
	}
}

// TestEndorseReplayedAnswer: over HTTP (2026-07-28), the person's answer
// with "endorse" counts once: replayed, it is APPROVAL_INVALID and writes
// no second endorsement record.
func TestEndorseReplayedAnswer(t *testing.T) {
	o := newOrigin(t)
	w := webFixture(t)
	gated := need(o.URL + "/gated/endorse-once")
	answer := map[string]any{"requestState": w.askModern(t, "web-client", gated), "inputResponses": mcp.InputResponses{
		"approve": mcp.NewElicitationInputResponse(mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
			Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"decision": "approve", "endorse": true}}}),
	}}
	if got := w.modernCall(t, "web-client", nil, true, "declare_need", gated, answer).result(t); got.IsError {
		t.Fatalf("answered once: %s", text(got))
	}
	if recs := endorseRecords(t, w.fixture); len(recs) != 1 || !strings.HasPrefix(recs[0].Principal, "elicitation:") {
		t.Fatalf("endorsement records after the answer: %+v", recs)
	}
	wantCode(t, w.modernCall(t, "web-client", nil, true, "declare_need", gated, answer).result(t), approvalInvalid)
	if recs := endorseRecords(t, w.fixture); len(recs) != 1 {
		t.Fatalf("a replayed answer endorsed again: %d records", len(recs))
	}
}

// TestConsoleApprovalProvenance: the console's Approvals page shows where
// each argument of a pending need came from (the agent's own URL here),
// and its approve form's endorse box endorses the need's values in its
// context, audited as context.endorse under the admin.
func TestConsoleApprovalProvenance(t *testing.T) {
	o := newOrigin(t)
	w := consoleWeb(t, "console_role: admin")
	agent := w.legacyClient(t, "web-operator", nil)
	res := call(t, agent, "declare_need", need(o.URL+"/gated/endorse-me"))
	if res.IsError || !strings.Contains(text(res), "airlock approvals approve") {
		t.Fatalf("pending: %s", text(res))
	}
	id := structured(t, res)["declaration_id"].(string)
	b := newBrowser(w.ts.URL, nil)
	csrf := b.admin(t)
	shown := b.do(t, http.MethodGet, "/console/approvals", nil, nil)
	for _, want := range []string{"Where the arguments came from", "<code>url</code>", "the agent&#39;s own", `name="endorse"`} {
		if !strings.Contains(shown.body, want) {
			t.Fatalf("approvals page lacks %q:\n%s", want, shown.body)
		}
	}
	form := url.Values{"id": {id}, "decision": {"approve"}, "reason": {"I know this page"}, "endorse": {"on"}, "csrf": {csrf}}
	if p := b.do(t, http.MethodPost, "/console/approvals/decide", form, nil); p.status != http.StatusSeeOther {
		t.Fatalf("approve with endorse: %d %s", p.status, p.body)
	}
	var rec *audit.Record
	for _, r := range w.auditRecords(t) {
		if r.Capability == provtrace.EndorseCapability {
			rec = &r
		}
	}
	if rec == nil || !strings.HasPrefix(rec.Principal, "operator:admin/") || rec.Transport != "console" || rec.Reason != "I know this page" ||
		!strings.Contains(string(rec.Extra), id) || strings.Contains(string(rec.Extra), "/gated/endorse-me") {
		t.Fatalf("endorsement record: %+v", rec)
	}
	op, err := operator.Open(w.state, true)
	must(t, err)
	defer op.Close()
	p, err := op.ContextProvenance(context.Background(), rec.ContextID)
	must(t, err)
	if len(p.Endorsements) != 1 || !strings.HasSuffix(p.Endorsements[0].Value, "/gated/endorse-me") {
		t.Fatalf("endorsements: %+v", p.Endorsements)
	}
}
