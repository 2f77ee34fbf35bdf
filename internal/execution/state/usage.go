package state

import (
	"context"
	"sync"

	"github.com/airlock-dev/airlock/internal/kit/rawjson"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/limits"
	"github.com/airlock-dev/airlock/internal/policy/policy"
	"github.com/airlock-dev/airlock/store"
)

// Trackers caches one limits.Tracker per policy version (a tracker holds
// only the compiled spec; the usage is in the store). The zero value is
// ready.
type Trackers struct{ m sync.Map }

// Get is pol's tracker.
func (t *Trackers) Get(pol *policy.Policy) *limits.Tracker {
	key := pol.Name() + "\x00" + pol.Version()
	if v, ok := t.m.Load(key); ok {
		return v.(*limits.Tracker)
	}
	v, _ := t.m.LoadOrStore(key, limits.NewTracker(pol.Limits(), nil))
	return v.(*limits.Tracker)
}

// UpdateUsage loads the usage states under keys (a missing one is empty),
// lets admit count the call in them, and stores them all back, in one store
// transaction shared by every process on the store. A refusal from admit is
// returned as it is and stores nothing; a store failure refuses the call
// (fail closed).
func UpdateUsage(ctx context.Context, db *store.DB, keys []string, admit func(map[string]*limits.State) error) error {
	var refused error
	err := db.UpdateUsage(ctx, keys, func(vals map[string][]byte) (map[string][]byte, error) {
		st := make(map[string]*limits.State, len(keys))
		for _, k := range keys {
			s, err := DecodeUsage(vals[k])
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
