package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/textcut"
	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/policy/redact"
)

// Provenance in the operator's approval commands (issue 22 item 5): each
// argument's origin, recomputed from the store (the context and its
// ancestors) when shown, and endorsement on approval or up front.

// provenanceSummary is the list's PROVENANCE column: name:origin for each
// traced argument, "-" when none; the names are the agent's, quoted when
// not plain.
func provenanceSummary(ctx context.Context, op *operator.API, d *operator.Declaration) string {
	args, err := op.NeedProvenance(ctx, d)
	if err != nil {
		return "?"
	}
	if len(args) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(args))
	for _, a := range args {
		name := a.Name
		if textcut.Quote(name, 24) != `"`+name+`"` || strings.ContainsAny(name, " :") {
			name = textcut.Quote(name, 24)
		}
		parts = append(parts, name+":"+a.Origin)
	}
	return short(strings.Join(parts, " "), 60)
}

// showApproval prints one declaration with each argument's provenance.
func showApproval(ctx context.Context, op *operator.API, id string, io Streams) error {
	ds, err := op.Approvals(ctx, true)
	if err != nil {
		return err
	}
	for _, d := range ds {
		if d.ID != id {
			continue
		}
		n := d.Need
		fmt.Fprintf(io.Out, "declaration %s: %s, %s by rule %s\n", d.ID, d.State, n.Operation, d.RuleID)
		fmt.Fprintf(io.Out, "context:   %s (principal %s)\n", d.ContextID, d.Principal)
		if n.Parameters.Upstream != "" {
			fmt.Fprintf(io.Out, "upstream:  %s, tool %s\n", textcut.Quote(n.Parameters.Upstream, 64), textcut.Quote(n.Parameters.Tool, 64))
			fmt.Fprintf(io.Out, "arguments: %s\n", textcut.Quote(string(n.Parameters.Arguments), 400))
		} else if where := redact.Query(strings.TrimSpace(n.Parameters.URL+" "+n.Parameters.Source+" "+n.Parameters.Query), redact.Masked); where != "" {
			fmt.Fprintf(io.Out, "where:     %s\n", textcut.Quote(where, 400))
		}
		fmt.Fprintf(io.Out, "the user asked:     %s\n", textcut.Quote(n.Justification.UserRequest, 300))
		fmt.Fprintf(io.Out, "missing knowledge:  %s\n", textcut.Quote(n.Justification.MissingKnowledge, 300))
		fmt.Fprintf(io.Out, "expected use:       %s\n", textcut.Quote(n.Justification.ExpectedUse, 300))
		args, err := op.NeedProvenance(ctx, d)
		if err != nil {
			return err
		}
		if len(args) > 0 {
			fmt.Fprintln(io.Out, "where its arguments came from:")
			for _, a := range args {
				fmt.Fprintf(io.Out, "  %s\n", a.Line())
			}
		}
		return nil
	}
	return fmt.Errorf("no declaration %q", id)
}

// approveEndorse approves and endorses (approvals approve --endorse).
func approveEndorse(ctx context.Context, op *operator.API, id, reason string, io Streams) error {
	d, rows, err := op.ApproveAndEndorse(ctx, id, operatorName(), reason)
	if d == nil {
		return err
	}
	fmt.Fprintf(io.Out, "approved %s (%s); single use, until %s\n", d.ID, d.Need.Operation, d.ExpiresAt.Format("15:04:05Z07:00"))
	if errors.Is(err, operator.ErrNothingToEndorse) {
		fmt.Fprintln(io.Out, "nothing endorsed: every argument is already trusted or endorsed (or too long to endorse)")
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(io.Out, "endorsed %d value(s) in context %s; later needs of that context using them are not asked about again\n", len(rows), d.ContextID)
	return nil
}

// endorseValue is `airlock context endorse CONTEXT --value V --reason R`.
func endorseValue(ctx context.Context, state, id, value, reason string, io Streams) error {
	if value == "" || reason == "" {
		return fmt.Errorf("endorse needs --value and --reason: %w", ErrUsage)
	}
	op, _, err := openOperator(state, false)
	if err != nil {
		return err
	}
	defer op.Close()
	e, err := op.Endorse(ctx, id, value, operatorName(), reason)
	if err != nil {
		return err
	}
	fmt.Fprintf(io.Out, "endorsed %s in context %s (this context only; audited)\n", e.ID, e.ContextID)
	return nil
}
