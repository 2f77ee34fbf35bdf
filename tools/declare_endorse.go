package tools

import (
	"context"
	"strings"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
)

// The approval question shows where each argument of the need came from
// (issue 22 item 5), one quoted, cut line per argument
// (toolkit.ArgOrigin.Line), and offers the person an explicit, optional
// choice to vouch for the values that no trusted input explains: the
// endorsement binds this context only, and the runner writes and audits it
// (runner/provenance_endorse.go). It is reached only through applyAnswer,
// after expandDeclaration checked that the role names the client as the
// approver and Redeem used up this server's question: an agent that writes
// its own answer, or replays one, endorses nothing
// (TestEndorseRefusedFromNonApprover).

// endorseField is the optional checkbox of the approval form.
const endorseField = "endorse"

var endorseProperty = map[string]any{
	"type": "boolean", "default": false, "title": "Also vouch for these values in this context",
	"description": "Values marked UNTRUSTED or the agent's own count as endorsed in later requests of this context; you are not asked about them again.",
}

// maxQuestionArgs bounds the provenance lines of one question.
const maxQuestionArgs = 16

// provenanceLines renders the traced arguments for the question; "" when
// nothing was traced.
func provenanceLines(args []toolkit.ArgOrigin) string {
	if len(args) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\nWhere its arguments came from:\n")
	for i, a := range args {
		if i == maxQuestionArgs {
			b.WriteString("- … and more\n")
			break
		}
		b.WriteString("- " + a.Line() + "\n")
	}
	return b.String()
}

// approveAnswer approves d on the person's word and, when the person ticked
// the endorse box, endorses its values in this context.
func approveAnswer(ctx context.Context, env *toolkit.Env, d *declarations.Declaration, by string, endorse bool) (*declarations.Declaration, error) {
	d, err := env.Declarations.Approve(ctx, d.ID, by, "approved by the person at the client")
	if err != nil || !endorse {
		return d, err
	}
	if err := env.Approvals.Endorse(ctx, d, "endorsed by the person at the client"); err != nil {
		return nil, err
	}
	return d, nil
}
