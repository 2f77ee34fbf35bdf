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

	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/sources"
)

// EnvKey is the context Env key listing its derived pool ids.
const EnvKey = "derived_pools"

// Store is what derived pools are kept in (the store).
type Store interface {
	UpdateUsage(ctx context.Context, keys []string, fn func(map[string][]byte) (map[string][]byte, error)) error
	UpdateContext(ctx context.Context, id string, mutate func(*contexts.Context) error) (*contexts.Context, error)
	Usage(ctx context.Context, key string) ([]byte, error)
}

// Pools registers derived pools in a process's pool registry and in the
// store. It is safe for concurrent use.
type Pools struct {
	st    Store
	pools *sources.Registry
	log   *slog.Logger
}

// New returns the derived pools of st, opened into pools.
func New(st Store, pools *sources.Registry, log *slog.Logger) *Pools {
	return &Pools{st: st, pools: pools, log: log}
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
}

// maxDerivedPools bounds the pools one context accumulates; the oldest
// stop being listed beyond it (their files stay on disk).
const maxDerivedPools = 64

// Add opens d here and records it for the context in the store.
func (p *Pools) Add(ctx context.Context, contextID string, d *toolkit.DerivedPool) error {
	e := derivedEntry{ID: d.ID, Description: d.Description, Dir: d.Dir, Manifest: d.Manifest, Trust: d.Trust, Readers: d.Readers}
	if err := p.pools.AddPool(e.poolConfig()); err != nil {
		return err
	}
	key := derivedKey(contextID)
	err := p.st.UpdateUsage(ctx, []string{key}, func(cur map[string][]byte) (map[string][]byte, error) {
		var list []derivedEntry
		if b := cur[key]; len(b) > 0 {
			if err := json.Unmarshal(b, &list); err != nil {
				return nil, fmt.Errorf("derived pools of %s: %w", contextID, err)
			}
		}
		list = append(list, e)
		if len(list) > maxDerivedPools {
			list = list[len(list)-maxDerivedPools:]
		}
		b, err := json.Marshal(list)
		return map[string][]byte{key: b}, err
	})
	if err != nil {
		return err
	}
	_, err = p.st.UpdateContext(ctx, contextID, func(cx *contexts.Context) error {
		ids := derivedIDs(cx)
		ids = append(ids, d.ID)
		if len(ids) > maxDerivedPools {
			ids = ids[len(ids)-maxDerivedPools:]
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
// are not on this machine is left out, and logged).
func (p *Pools) BoundIDs(ctx context.Context, cx *contexts.Context) []string {
	derived := derivedIDs(cx)
	if len(derived) == 0 {
		return cx.Pools
	}
	ids := slices.Clone(cx.Pools)
	var entries map[string]derivedEntry
	for _, id := range derived {
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
