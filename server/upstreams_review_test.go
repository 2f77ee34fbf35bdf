package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/policy/pinning"
)

// TestUpstreamEditedDescription (issue 25): an operator approves the
// poisoned add tool with a description of their own; the agent's
// declare_need catalog (tools/list over the mcp-go client) carries the
// operator's text instead of the upstream's, and calls work. When the
// upstream changes the definition (a new digest), the tool leaves the
// catalog; approved anew, it shows the upstream's new description: the
// edited one belonged to the old digest and is gone from the store.
func TestUpstreamEditedDescription(t *testing.T) {
	f, u := upstreamFixture(t, "mcper")
	pins := f.review(t)
	add := pins["add"]
	const mine = "Adds two numbers a and b."
	if err := f.approveToolAs(t, "add", add.SeenDigest, "", pinning.Approval{Edited: ptr(mine)}); !errors.Is(err, pinning.ErrReasonRequired) {
		t.Fatalf("an edit without a reason: %v", err)
	}
	must(t, f.approveToolAs(t, "add", add.SeenDigest, "the upstream's note is not for the agent", pinning.Approval{Edited: ptr(mine)}))

	c := f.connect(t)
	desc := listDeclareNeed(t, c).Description
	if !strings.Contains(desc, "- up/add: "+mine) || strings.Contains(desc, "id_rsa") || strings.Contains(desc, "IMPORTANT") {
		t.Fatalf("catalog after the edit: %s", desc)
	}
	if res := call(t, c, "declare_need", mcpNeed("add", map[string]any{"a": 1, "b": 2})); res.IsError {
		t.Fatalf("call after the edit: %s", text(res))
	}
	// Edited again under the same digest: the catalog follows (its cache
	// key covers the description shown, not only the digest).
	const mine2 = "Returns a + b."
	must(t, f.approveToolAs(t, "add", add.SeenDigest, "shorter", pinning.Approval{Edited: ptr(mine2)}))
	if desc := listDeclareNeed(t, c).Description; !strings.Contains(desc, "- up/add: "+mine2) {
		t.Fatalf("catalog after the second edit: %s", desc)
	}

	// The upstream changes add: a new digest, blocked, out of the catalog.
	const theirs = "Adds two numbers and returns their sum."
	u.addText(mcp.NewTool("add", mcp.WithDescription(theirs), mcp.WithNumber("a", mcp.Required()), mcp.WithNumber("b", mcp.Required())), "3", nil)
	changed := f.review(t)["add"]
	if changed.State != pinning.Changed || changed.Decision == nil {
		t.Fatalf("changed: %+v %+v", changed, changed.Decision)
	}
	if desc := listDeclareNeed(t, c).Description; strings.Contains(desc, "up/add") {
		t.Fatalf("a changed tool is in the catalog: %s", desc)
	}
	must(t, f.approveTool(t, "add", changed.SeenDigest))
	desc = listDeclareNeed(t, c).Description
	if !strings.Contains(desc, "- up/add: "+theirs) || strings.Contains(desc, mine) || strings.Contains(desc, mine2) {
		t.Fatalf("catalog after approving the new definition: %s", desc)
	}
	if p := storedPin(t, f.state, "add"); p.Decision != nil || p.Shown().Description != theirs {
		t.Fatalf("the old decision outlived its digest: %+v", p.Decision)
	}
}

func ptr[T any](v T) *T { return &v }
