package cli

import (
	"context"
	"fmt"
	"strings"
)

// runPhase lets an operator move a live session between planning and
// execution; the agent can read its phase but never set it.
func runPhase(ctx context.Context, args []string, io Streams) error {
	if len(args) < 2 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("airlock phase SESSION planning|execution --reason TEXT [--state DIR]: %w", ErrUsage)
	}
	session, phase := args[0], args[1]
	fs := newFlags("phase", io)
	state := fs.String("state", "", "state directory")
	reason := fs.String("reason", "", "why (recorded in the audit trail)")
	if err := parse(fs, args[2:]); err != nil {
		return err
	}
	if *reason == "" {
		return fmt.Errorf("--reason is required (it is recorded): %w", ErrUsage)
	}
	op, _, err := openOperator(*state, false)
	if err != nil {
		return err
	}
	defer op.Close()
	if err := op.SetPhase(ctx, session, phase, operatorName(), *reason); err != nil {
		return err
	}
	fmt.Fprintf(io.Out, "session %s: phase %s (applied by the running server within a second)\n", session, phase)
	return nil
}
