package runner

import (
	"context"

	"github.com/airlock-dev/airlock/violation"
)

// killSwitch is step 3. The switch is a file in the state directory
// (package killswitch), so an operator's `airlock kill` in another process
// trips a running server on its next call even while some process holds
// the store's write lock, and restoring an older database cannot release
// it; the store's own kill_switch setting is honoured too. The file costs
// one stat per call. If either state cannot be read, the call is refused:
// fail closed.
func (r *Runner) killSwitch(ctx context.Context) error {
	st, err := r.anchor.kill.State()
	if err != nil {
		return violation.Wrap(violation.KillSwitchEngaged, err, "kill switch state unavailable; refusing all calls")
	}
	// A change this process has not seen recorded is audited in the
	// background as soon as the store can take it.
	if st.ID != "" {
		if p := r.anchor.recorded.Load(); p == nil || *p != st.ID {
			r.recordKillAsync(st)
		}
	}
	if st.Engaged {
		return violation.New(violation.KillSwitchEngaged, "the operator has stopped all tool execution")
	}
	engaged, err := r.db.KillSwitchEngaged(ctx)
	if err != nil {
		return violation.Wrap(violation.KillSwitchEngaged, err, "kill switch state unavailable; refusing all calls")
	}
	if engaged {
		return violation.New(violation.KillSwitchEngaged, "the operator has stopped all tool execution")
	}
	return nil
}
