package cli

import (
	"context"
	"fmt"
	"os/user"
)

// runKill engages or releases the kill switch of every server sharing the
// state directory; servers refuse every call while it is engaged.
func runKill(ctx context.Context, args []string, io Streams) error {
	fs := newFlags("kill", io)
	state := fs.String("state", "", "state directory")
	reason := fs.String("reason", "", "why (recorded in the audit trail)")
	release := fs.Bool("release", false, "release the kill switch instead of engaging it")
	status := fs.Bool("status", false, "only show whether the kill switch is engaged")
	if err := parse(fs, args); err != nil {
		return err
	}
	op, _, err := openOperator(*state, *status)
	if err != nil {
		return err
	}
	defer op.Close()
	if *status {
		on, err := op.KillSwitch(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(io.Out, "kill switch engaged: %v\n", on)
		return nil
	}
	if !*release && *reason == "" {
		return fmt.Errorf("airlock kill --reason TEXT (the reason is recorded): %w", ErrUsage)
	}
	if err := op.SetKillSwitch(ctx, !*release, operatorName(), *reason); err != nil {
		return err
	}
	if *release {
		fmt.Fprintln(io.Out, "kill switch released")
	} else {
		fmt.Fprintln(io.Out, "kill switch ENGAGED: every tool call is refused until 'airlock kill --release'")
	}
	return nil
}

func operatorName() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}
