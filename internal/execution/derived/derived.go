// Package derived keeps the pools that calls made. A derived pool is a
// pipeline run's published outputs, served read-only (integrity-checked
// against their manifest, fenced when untrusted) by list_pools and
// read_pool_file like any other pool, in the context that ran the
// pipeline.
//
// The invariant it keeps: every process serving the context can open the
// pools it made. The store keeps what that takes: the ids in the context's
// Env (read with the context on every call anyway) and the entries under a
// usage key. A process on another machine, where the files are not, leaves
// such a pool out of its binding and logs it.
package derived

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/sources"
)

// EnvKey is the context Env key listing its derived pool ids.
const EnvKey = "derived_pools"

// Store is what derived pools are kept in (the store).
type Store interface {
	UpdateUsage(ctx context.Context, keys []string, fn func(map[string][]byte) (map[string][]byte, error)) error
	// UpdateContextDeferred commits without an fsync of its own: the
	// call's audit record, committed after it and before the answer,
	// makes it durable (store.DB.UpdateContextDeferred).
	UpdateContextDeferred(ctx context.Context, id string, mutate func(*contexts.Context) error) (*contexts.Context, error)
	Usage(ctx context.Context, key string) ([]byte, error)
}

// Pools registers derived pools in a process's pool registry and in the
// store. It is safe for concurrent use.
type Pools struct {
	st        Store
	pools     *sources.Registry
	log       *slog.Logger
	now       func() time.Time
	retention func() Retention
}

// Retention is how many output pools a context keeps listed and for how
// long (issue 24 item 5): past either, the oldest stop being listed and
// bound (their files stay in the state directory).
type Retention struct {
	Count  int           // newest kept; 0: DefaultRetentionCount
	MaxAge time.Duration // 0: no age limit
}

// DefaultRetentionCount is the output pools a context keeps by default.
const DefaultRetentionCount = 32

// maxDerivedPools bounds Retention.Count, whatever is configured.
const maxDerivedPools = 1000

func (r Retention) count() int {
	if r.Count <= 0 {
		return DefaultRetentionCount
	}
	return min(r.Count, maxDerivedPools)
}

// expired says whether an entry published at created is past the age
// limit (an entry kept before publication times were recorded never is).
func (r Retention) expired(created, now time.Time) bool {
	return r.MaxAge > 0 && !created.IsZero() && now.Sub(created) > r.MaxAge
}

// New returns the derived pools of st, opened into pools; retention is read
// at each publication and binding, so a reload applies to the next one.
func New(st Store, pools *sources.Registry, log *slog.Logger, now func() time.Time, retention func() Retention) *Pools {
	return &Pools{st: st, pools: pools, log: log, now: now, retention: retention}
}

func derivedKey(contextID string) string { return "derived-pools:" + contextID }

type derivedEntry struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	Dir         string `json:"dir"`
	Manifest    string `json:"manifest"`
	Trust       string `json:"trust"`
	// Readers keeps null (public) apart from [] (nobody): no omitempty.
	Readers []string `json:"readers"`
	// Created is when the run published it (zero for entries recorded
	// before the age limit existed).
	Created time.Time `json:"created,omitzero"`
}

// Add opens d here and records it for the context in the store, dropping
// from the context's list what the retention no longer keeps.
func (p *Pools) Add(ctx context.Context, contextID string, d *toolkit.DerivedPool) error {
	now, keep := p.now(), p.retention()
	e := derivedEntry{ID: d.ID, Description: d.Description, Dir: d.Dir, Manifest: d.Manifest, Trust: d.Trust, Readers: d.Readers, Created: now.UTC()}
	if err := p.pools.AddPool(e.poolConfig()); err != nil {
		return err
	}
	key := derivedKey(contextID)
	dropped := map[string]bool{}
	err := p.st.UpdateUsage(ctx, []string{key}, func(cur map[string][]byte) (map[string][]byte, error) {
		var list []derivedEntry
		if b := cur[key]; len(b) > 0 {
			if err := json.Unmarshal(b, &list); err != nil {
				return nil, fmt.Errorf("derived pools of %s: %w", contextID, err)
			}
		}
		list = append(list, e)
		kept := list[:0]
		for _, x := range list {
			if keep.expired(x.Created, now) {
				dropped[x.ID] = true
				continue
			}
			kept = append(kept, x)
		}
		if n := len(kept) - keep.count(); n > 0 {
			for _, x := range kept[:n] {
				dropped[x.ID] = true
			}
			kept = kept[n:]
		}
		b, err := json.Marshal(kept)
		return map[string][]byte{key: b}, err
	})
	if err != nil {
		return err
	}
	// Deferred like the usage update above: a run's finish makes one
	// durable commit, its audit record, which comes after both in the log
	// and before the answer (issue 27; TestAddDefersItsCommits).
	_, err = p.st.UpdateContextDeferred(ctx, contextID, func(cx *contexts.Context) error {
		// Merged with what the context lists now, not overwritten: another
		// process's publication may have landed in between.
		ids := slices.DeleteFunc(append(derivedIDs(cx), d.ID), func(id string) bool { return dropped[id] })
		if n := len(ids) - keep.count(); n > 0 {
			ids = ids[n:]
		}
		if cx.Env == nil {
			cx.Env = map[string]string{}
		}
		cx.Env[EnvKey] = strings.Join(ids, ",")
		return nil
	})
	return err
}

func (e derivedEntry) poolConfig() sources.PoolConfig {
	return sources.PoolConfig{ID: e.ID, Description: e.Description, Path: e.Dir, Trust: sources.Trust(e.Trust), Manifest: e.Manifest, Readers: e.Readers}
}

// derivedIDs are the derived pools a context lists.
func derivedIDs(cx *contexts.Context) []string {
	v := cx.Env[EnvKey]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// BoundIDs is what a context's binding holds: its frozen pools and its
// derived pools this process can open (another process's run whose files
// are not on this machine is left out, and logged) and the retention still
// keeps.
func (p *Pools) BoundIDs(ctx context.Context, cx *contexts.Context) []string {
	derived := derivedIDs(cx)
	if len(derived) == 0 {
		return cx.Pools
	}
	keep := p.retention()
	if n := len(derived) - keep.count(); n > 0 {
		derived = derived[n:] // listed before a lower count was configured
	}
	ids := slices.Clone(cx.Pools)
	var entries map[string]derivedEntry
	if keep.MaxAge > 0 {
		entries = p.entries(ctx, cx.ID) // an age limit needs each one's publication time
	}
	now := p.now()
	for _, id := range derived {
		if keep.MaxAge > 0 && keep.expired(entries[id].Created, now) {
			continue
		}
		if p.pools.Has(id) {
			ids = append(ids, id)
			continue
		}
		if entries == nil {
			entries = p.entries(ctx, cx.ID)
		}
		e, ok := entries[id]
		if !ok {
			continue
		}
		if err := p.pools.AddPool(e.poolConfig()); err != nil {
			p.log.Warn("a derived pool cannot be opened by this process", "context", cx.ID, "pool", id, "err", err)
			continue
		}
		ids = append(ids, id)
	}
	return ids
}

func (p *Pools) entries(ctx context.Context, contextID string) map[string]derivedEntry {
	out := map[string]derivedEntry{}
	b, err := p.st.Usage(ctx, derivedKey(contextID))
	if err != nil || len(b) == 0 {
		return out
	}
	var list []derivedEntry
	if json.Unmarshal(b, &list) != nil {
		return out
	}
	for _, e := range list {
		out[e.ID] = e
	}
	return out
}
