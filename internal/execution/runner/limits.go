package runner

import (
	"context"

	"github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/internal/policy/limits"
)

// admit is step 6: one call of capability counted against the limits of
// the context and of every ancestor (a child's calls spend its parent's
// budget too), and against the principal's rate buckets, in one store
// transaction shared by every process on the store. Nothing is counted
// when any limit refuses.
func (r *Runner) admit(ctx context.Context, chain []*contexts.Context, principal, capability string) error {
	type level struct {
		key string
		tr  *limits.Tracker
	}
	var levels []level
	counts := false
	for _, cx := range chain {
		pol, err := r.policyOf(cx)
		if err != nil {
			return err
		}
		tr := r.trackers.Get(pol)
		counts = counts || tr.Counts()
		levels = append(levels, level{state.CounterKey(cx.ID), tr})
	}
	if !counts {
		return nil
	}
	keys := []string{state.RateKey(principal)}
	for _, l := range levels {
		keys = append(keys, l.key)
	}
	now := r.now()
	return state.UpdateUsage(ctx, r.db, keys, func(st map[string]*limits.State) error {
		for i, l := range levels {
			// Rates are the calling context's; an ancestor's own rate specs
			// are at least as wide (its policy is extended, never widened).
			rates := &limits.State{}
			if i == 0 {
				rates = st[state.RateKey(principal)]
			}
			if err := l.tr.AdmitState(st[l.key], rates, capability, now); err != nil {
				return err
			}
		}
		return nil
	})
}

// admitRate counts one call against a principal-wide rate kept under its
// own key (the broker's comm.fetch per-minute rate).
func (r *Runner) admitRate(ctx context.Context, key string, tr *limits.Tracker, capability string) error {
	now := r.now()
	return state.UpdateUsage(ctx, r.db, []string{key}, func(st map[string]*limits.State) error {
		return tr.AdmitState(st[key], st[key], capability, now)
	})
}
