package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// runPhase lets an operator move a runtime context between planning and
// execution; the agent can read its phase but never set it. Every server on
// the state directory applies it on the context's next call.
func runPhase(ctx context.Context, args []string, io Streams) error {
	if len(args) < 2 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("airlock phase CONTEXT planning|execution --reason TEXT [--state DIR] (CONTEXT: a context id or a session id; see `airlock context list`): %w", ErrUsage)
	}
	id, phase := args[0], args[1]
	fs := newFlags("phase", io)
	state := fs.String("state", "", "state directory")
	reason := fs.String("reason", "", "why (recorded in the audit trail)")
	if err := parse(fs, args[2:]); err != nil {
		return err
	}
	if *reason == "" {
		return fmt.Errorf("--reason is required (it is recorded): %w", ErrUsage)
	}
	op, dir, err := openOperator(*state, false)
	if err != nil {
		return err
	}
	defer op.Close()
	cx, err := op.SetPhase(ctx, id, phase, operatorName(), *reason)
	if errors.Is(err, operator.ErrNoSuchContext) || errors.Is(err, operator.ErrAmbiguousID) {
		// The refusal is audited; the hint names the state in use.
		return fmt.Errorf("%w; nothing changed (the contexts: airlock context list --state %s)", err, dir)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(io.Out, "context %s (%s): phase %s, in force from its next call\n", cx.ID, cx.Principal, cx.Phase)
	return nil
}
