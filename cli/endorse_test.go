package cli

import (
	"errors"
	"strings"
	"testing"
)

// TestContextEndorse: `airlock context endorse` vouches for a value in one
// context, audited as context.endorse with the value's HMAC, not the
// value; it needs --value and --reason; `approvals show` of an unknown id
// is an error, and `approvals list` has the PROVENANCE column.
func TestContextEndorse(t *testing.T) {
	state, list := servedState(t)
	parent := ctxIDRE.FindString(list)
	child := ctxIDRE.FindString(mustRun(t, "context", "create", "--parent", parent, "--reason", "child", "--state", state))
	const value = "GB29NWBK60161331926819"
	out := mustRun(t, "context", "endorse", child, "--value", value, "--reason", "checked by phone", "--state", state)
	if !strings.Contains(out, "endorsed v_") || !strings.Contains(out, child) {
		t.Fatalf("endorse: %s", out)
	}
	tail := mustRun(t, "audit", "tail", "-n", "1", "--json", "--state", state)
	if !strings.Contains(tail, `"context.endorse"`) || !strings.Contains(tail, "hmac-sha256:") || strings.Contains(tail, value) {
		t.Fatalf("the endorsement's audit record: %s", tail)
	}
	if _, err := run(t, "context", "endorse", child, "--reason", "r", "--state", state); !errors.Is(err, ErrUsage) {
		t.Fatalf("endorse without --value: %v", err)
	}
	if _, err := run(t, "approvals", "show", "decl_x", "--state", state); err == nil {
		t.Fatal("show of an unknown declaration succeeded")
	}
	if out := mustRun(t, "approvals", "list", "--state", state); !strings.Contains(out, "PROVENANCE") {
		t.Fatalf("list: %s", out)
	}
}
