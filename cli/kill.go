package cli

import (
	"context"
	"fmt"
	"os/user"
	"time"

	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// runKill engages or releases the kill switch of every server sharing the
// state directory; servers refuse every call while it is engaged.
//
// Engaging never waits for the audit store: the switch is a file, written
// and fsynced before anything else, so it trips even while another process
// holds the store's write lock. The audit record follows, retried for up to
// --wait; a running server records it too as soon as it can.
func runKill(ctx context.Context, args []string, io Streams) error {
	fs := newFlags("kill", io)
	state := fs.String("state", "", "state directory")
	reason := fs.String("reason", "", "why (recorded in the audit trail)")
	release := fs.Bool("release", false, "release the kill switch instead of engaging it")
	status := fs.Bool("status", false, "only show whether the kill switch is engaged")
	wait := fs.Duration("wait", time.Minute, "how long to retry the audit record while the store is locked")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *status || *release {
		return killWithStore(ctx, *state, *status, *reason, io)
	}
	if *reason == "" {
		return fmt.Errorf("airlock kill --reason TEXT (the reason is recorded): %w", ErrUsage)
	}
	dir, err := existingState(*state)
	if err != nil {
		return err
	}
	st, err := operator.TripKillSwitch(dir, operatorName(), *reason)
	if err != nil {
		return err
	}
	fmt.Fprintln(io.Out, "kill switch ENGAGED: every tool call is refused until 'airlock kill --release'")
	if err := operator.CheckpointNow(ctx, dir); err != nil {
		fmt.Fprintf(io.Err, "warning: witness checkpoint not written: %v\n", err)
	}
	wctx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	rec, err := operator.RecordKillChange(wctx, dir, st)
	if err != nil {
		// The switch is engaged; only its record is late. Say so, and fail
		// so that scripts notice, but the switch stays on.
		fmt.Fprintf(io.Err, "the audit record is pending (a running server, or the next 'airlock kill', records it): %v\n", err)
		return fmt.Errorf("kill switch engaged but not yet audited: %w", ErrFailed)
	}
	if rec != nil {
		fmt.Fprintf(io.Out, "recorded as audit record %d\n", rec.Seq)
	}
	// A checkpoint after the record anchors it.
	if err := operator.CheckpointNow(ctx, dir); err != nil {
		fmt.Fprintf(io.Err, "warning: witness checkpoint not written: %v\n", err)
	}
	return nil
}

// killWithStore shows the state, or releases the switch (which must be
// audited before it takes effect, so it needs the store).
func killWithStore(ctx context.Context, state string, status bool, reason string, io Streams) error {
	op, _, err := openOperator(state, status)
	if err != nil {
		return err
	}
	defer op.Close()
	if status {
		on, err := op.KillSwitch(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(io.Out, "kill switch engaged: %v\n", on)
		return nil
	}
	if err := op.SetKillSwitch(ctx, false, operatorName(), reason); err != nil {
		return err
	}
	fmt.Fprintln(io.Out, "kill switch released")
	return nil
}

func operatorName() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}
