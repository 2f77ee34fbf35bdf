package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/internal/policy/redact"
)

// runApprovals is the operator's side of declare_need: list what waits
// for a decision, approve or deny it. Every decision is audited.
func runApprovals(ctx context.Context, args []string, io Streams) error {
	usage := fmt.Errorf("airlock approvals list [--all] | show ID | approve ID [--endorse] [--reason TEXT] | deny ID --reason TEXT  [--state DIR]: %w", ErrUsage)
	verb, id, rest, err := subcommand(args, usage, "approve", "deny", "show")
	if err != nil {
		return err
	}
	fs := newFlags("approvals "+verb, io)
	state := fs.String("state", "", "state directory")
	all := fs.Bool("all", false, "list: every declaration, not only those waiting")
	reason := fs.String("reason", "", "why (shown to the agent, recorded in the audit trail)")
	endorse := fs.Bool("endorse", false, "approve: also vouch, in the need's context only, for its values that came from untrusted content or from the agent")
	if err := parse(fs, rest); err != nil {
		return err
	}
	op, _, err := openOperator(*state, verb == "list" || verb == "show")
	if err != nil {
		return err
	}
	defer op.Close()
	switch verb {
	case "list":
		ds, err := op.Approvals(ctx, *all)
		if err != nil {
			return err
		}
		w := newTable(io.Out)
		fmt.Fprintln(w, "ID\tSTATE\tOPERATION\tWHERE\tCONTEXT\tPRINCIPAL\tPROVENANCE\tWHY (user request)")
		for _, d := range ds {
			where := d.Need.Parameters.URL
			if d.Need.Parameters.Upstream != "" {
				// Quoted: the arguments are the agent's text (bidi and
				// invisible characters show as escapes, not on the terminal).
				where = "mcp:" + d.Need.Parameters.Upstream + "/" + d.Need.Parameters.Tool + " " + strconv.Quote(string(d.Need.Parameters.Arguments))
			}
			if where == "" {
				where = strings.TrimSpace(d.Need.Parameters.Source + " " + d.Need.Parameters.Query)
			}
			// Needs with a credential in the URL are refused since issue
			// 10 item 3; one stored before is listed without its value.
			where = redact.Query(where, redact.Masked)
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", d.ID, d.State, d.Need.Operation, listCell(where, 60), short(d.ContextID, 28), d.Principal,
				provenanceSummary(ctx, op, d), listCell(d.Need.Justification.UserRequest, 60))
		}
		return w.Flush()
	case "show":
		return showApproval(ctx, op, id, io)
	case "approve":
		if *reason == "" {
			*reason = "approved by the operator"
		}
		if *endorse {
			return approveEndorse(ctx, op, id, *reason, io)
		}
		d, err := op.Approve(ctx, id, operatorName(), *reason)
		if err != nil {
			return err
		}
		fmt.Fprintf(io.Out, "approved %s (%s %s); single use, until %s\n", d.ID, d.Need.Operation,
			redact.Query(d.Need.Parameters.URL+d.Need.Parameters.Query, redact.Masked), d.ExpiresAt.Format("15:04:05Z07:00"))
		return nil
	case "deny":
		if *reason == "" {
			return fmt.Errorf("deny needs --reason (the agent is told it): %w", ErrUsage)
		}
		d, err := op.Deny(ctx, id, operatorName(), *reason)
		if err != nil {
			return err
		}
		fmt.Fprintf(io.Out, "denied %s\n", d.ID)
		return nil
	default:
		return usage
	}
}
