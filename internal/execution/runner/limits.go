package runner

import (
	"context"
	"sync"

	"github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/kit/rawjson"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/internal/policy/limits"
	"github.com/airlock-dev/airlock/internal/policy/policy"
)

// trackers caches one limits.Tracker per policy version (a tracker holds
// only the compiled spec; the usage is in the store).
type trackers struct{ m sync.Map }

func (t *trackers) get(pol *policy.Policy) *limits.Tracker {
	key := pol.Name() + "\x00" + pol.Version()
	if v, ok := t.m.Load(key); ok {
		return v.(*limits.Tracker)
	}
	v, _ := t.m.LoadOrStore(key, limits.NewTracker(pol.Limits(), nil))
	return v.(*limits.Tracker)
}

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
		tr := r.trackers.get(pol)
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
	return r.updateUsage(ctx, keys, func(st map[string]*limits.State) error {
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
	return r.updateUsage(ctx, []string{key}, func(st map[string]*limits.State) error {
		return tr.AdmitState(st[key], st[key], capability, now)
	})
}

// updateUsage loads the usage states under keys (a missing one is empty),
// lets admit count the call in them, and stores them all back, in one store
// transaction. A refusal from admit is returned as it is and stores
// nothing; a store failure refuses the call (fail closed).
func (r *Runner) updateUsage(ctx context.Context, keys []string, admit func(map[string]*limits.State) error) error {
	var refused error
	err := r.db.UpdateUsage(ctx, keys, func(vals map[string][]byte) (map[string][]byte, error) {
		st := make(map[string]*limits.State, len(keys))
		for _, k := range keys {
			s, err := state.DecodeUsage(vals[k])
			if err != nil {
				return nil, err
			}
			st[k] = s
		}
		if refused = admit(st); refused != nil {
			return nil, refused
		}
		out := make(map[string][]byte, len(keys))
		for _, k := range keys {
			out[k] = rawjson.Marshal(st[k])
		}
		return out, nil
	})
	if refused != nil {
		return refused
	}
	if err != nil {
		return violation.Wrap(violation.Unavailable, err, "limit usage cannot be recorded; call refused")
	}
	return nil
}
