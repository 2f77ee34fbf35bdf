package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/runner"
)

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
	var rec *runner.AuditRecord
	for _, r := range w.auditRecords(t) {
		if r.Capability == runner.EndorseCapability {
			rec = &r
		}
	}
	if rec == nil || !strings.HasPrefix(rec.Principal, "operator:admin/") || rec.Transport != "console" || rec.Reason != "I know this page" ||
		!strings.Contains(string(rec.Extra), id) || strings.Contains(string(rec.Extra), "/gated/endorse-me") {
		t.Fatalf("endorsement record: %+v", rec)
	}
	op, err := runner.OpenOperator(w.state, true)
	must(t, err)
	defer op.Close()
	p, err := op.ContextProvenance(context.Background(), rec.ContextID)
	must(t, err)
	if len(p.Endorsements) != 1 || !strings.HasSuffix(p.Endorsements[0].Value, "/gated/endorse-me") {
		t.Fatalf("endorsements: %+v", p.Endorsements)
	}
}
