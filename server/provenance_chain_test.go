package server

import (
	"strings"
	"testing"
)

// TestProvenanceChildSeesAncestors: a child created under a context whose
// task was given traces against that task (trusted) and against the content
// labelled in it (untrusted): the landlord's IBAN from the parent's task is
// paid without a person; the attacker's IBAN the parent's agent read is
// PROVENANCE_DENIED in the child; the sources name the ancestor.
func TestProvenanceChildSeesAncestors(t *testing.T) {
	f, cx, handle, sent := endorseFixture(t, "operator")
	if res := f.child(t, f.r, handle).call(t, "declare_need", mcpNeed("get_transactions", nil)); res.IsError {
		t.Fatal(text(res))
	}
	_, grandchild := f.newChild(t, cx, "") // no task of its own
	gc := f.child(t, f.r, grandchild)
	if res := gc.call(t, "declare_need", sendMoney(landlordIBAN, 1200)); res.IsError || !strings.Contains(text(res), "sent") {
		t.Fatalf("the parent's task IBAN in the child: %s", text(res))
	}
	wantCode(t, gc.call(t, "declare_need", sendMoney(attackerIBAN, 10)), "PROVENANCE_DENIED")
	if n := sent.Load(); n != 1 {
		t.Fatalf("send_money reached the upstream %d times, want 1", n)
	}
	var named bool
	for _, r := range f.auditRecords(t) {
		named = named || strings.Contains(string(r.Extra), `"origin":"trusted","sources":["`+cx+`/task"`)
	}
	if !named {
		t.Fatal("no record names the ancestor's task as the source")
	}
}
