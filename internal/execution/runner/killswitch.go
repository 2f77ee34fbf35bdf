package runner

import (
	"context"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// killSwitch is step 3. The switch is a file in the state directory
// (package killswitch), so an operator's `airlock kill` in another process
// trips a running server even while some process holds the store's write
// lock, and restoring an older database cannot release it; the store's own
// kill_switch setting is honoured too (on PostgreSQL, every instance's).
// Every call reads both itself (state.Anchor.Kill: one stat, one store
// probe), so a call that starts after `airlock kill` returned is refused by
// construction, not when some watcher gets to run (issue 26 item 7,
// TestKillSwitchNextCallRefused). If either state cannot be read, the call
// is refused: fail closed.
//
// A change this process has not seen recorded is audited in the background
// as soon as the store can take it (state.Anchor.Kill).
func (r *Runner) killSwitch(ctx context.Context) error {
	v := r.anchor.Kill(ctx)
	if v.Err != nil {
		r.upstreams.StopWarm()
		r.pipelines.Sandbox.StopSpare()
		return violation.Wrap(violation.KillSwitchEngaged, v.Err, "kill switch state unavailable; refusing all calls")
	}
	if v.File.Engaged || v.Store {
		r.upstreams.StopWarm() // before the refusal returns: TestKillSwitchStopsWarmUpstream
		r.pipelines.Sandbox.StopSpare()
		return violation.New(violation.KillSwitchEngaged, "the operator has stopped all tool execution")
	}
	return nil
}
