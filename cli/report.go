package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/operator/report"
)

// runReport prints a session's "Sources Used" report (seed 000) as
// markdown, built from the audit trail alone (package report).
func runReport(ctx context.Context, args []string, io Streams) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("airlock report SESSION [--state DIR] (a session id or a unique prefix; see `airlock audit tail`): %w", ErrUsage)
	}
	id := args[0]
	fs := newFlags("report", io)
	state := fs.String("state", "", "state directory")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	op, dir, err := openOperator(*state, true)
	if err != nil {
		return err
	}
	defer op.Close()
	rep, err := report.Build(ctx, op, id)
	switch {
	case errors.Is(err, report.ErrAmbiguous):
		return fmt.Errorf("%w: %w", err, ErrUsage)
	case errors.Is(err, report.ErrNoSession):
		return fmt.Errorf("no session %q in the audit trail of %s: %w", id, dir, ErrFailed)
	case err != nil:
		return err
	}
	rep.WriteMarkdown(io.Out)
	return nil
}
