package runner

import (
	"context"

	"github.com/airlock-dev/airlock/violation"
)

// killSwitch is step 3. The switch lives in the store so an operator's
// `airlock kill` in another process trips a running server on its next
// call. If its state cannot be read, the call is refused: fail closed.
func (r *Runner) killSwitch(ctx context.Context) error {
	engaged, err := r.db.KillSwitchEngaged(ctx)
	if err != nil {
		return violation.Wrap(violation.KillSwitchEngaged, err, "kill switch state unavailable; refusing all calls")
	}
	if engaged {
		return violation.New(violation.KillSwitchEngaged, "the operator has stopped all tool execution")
	}
	return nil
}
