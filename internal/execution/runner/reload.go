package runner

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/catalog"
	"github.com/airlock-dev/airlock/internal/policy/policy"
)

// generation is one loaded configuration, its compiled policies and the
// tool declarations (schemas, validators) specialised to it.
type generation struct {
	cfg      *config.Config
	policies *policy.Set
	tools    map[string]catalog.Tool
	// catalogs are the per-caller declarations (Session.Tools).
	catalogs *catalog.Cache
}

// ErrReloadPools reports a reload that changes the pools, which are bound
// into live sessions' frozen contexts and so need a restart.
var ErrReloadPools = errors.New("the pools section changed; restart to apply it")

// Reload swaps in a new configuration: new sessions get its roles and
// policies, and the server re-reads its tokens from it (revoking a token
// takes effect on the next request). Sessions already open keep the policy
// they were opened with. A configuration that cannot be applied leaves the
// old one in force; either way the attempt is audited.
func (r *Runner) Reload(ctx context.Context, cfg *config.Config, by string) error {
	err := r.reload(cfg)
	rec := audit.Reload(r.now().UTC(), by, cfg.File())
	if err != nil {
		rec = audit.ReloadRefusal(r.now().UTC(), by, err)
	}
	if aerr := r.db.Append(context.WithoutCancel(ctx), rec); aerr != nil {
		r.log.Error("auditing reload", "err", aerr)
	}
	return err
}

func (r *Runner) reload(cfg *config.Config) error {
	old := r.gen.Load()
	if !reflect.DeepEqual(old.cfg.Pools, cfg.Pools) {
		return ErrReloadPools
	}
	gen, err := r.newGeneration(cfg)
	if err != nil {
		return err
	}
	r.gen.Store(gen)
	r.notifier.Reload(old.cfg, cfg)
	r.creds.Reload(cfg.Credentials)
	r.creds.Check()
	return nil
}

// newGeneration compiles cfg's policies and each tool's declaration for it.
func (r *Runner) newGeneration(cfg *config.Config) (*generation, error) {
	policies, err := cfg.PolicySet()
	if err != nil {
		return nil, fmt.Errorf("compiling policies: %w", err)
	}
	gen := &generation{cfg: cfg, policies: policies, tools: map[string]catalog.Tool{}, catalogs: &catalog.Cache{}}
	// The generation's declarations carry no comm.mcp catalog: what a
	// caller is shown depends on its context's policy and on the pins as
	// they are when it lists (Session.Tools). The arguments are validated
	// against the base schema here, then against the pinned input schema
	// as the store holds it (upstreams.check), so an approval or a change
	// made since this generation began never meets a stale schema.
	for _, name := range r.order {
		v, err := catalog.Declare(r.tools[name], cfg, nil)
		if err != nil {
			return nil, err
		}
		gen.tools[name] = v
	}
	return gen, nil
}

// RecordReloadFailure audits a reload whose configuration did not even load.
func (r *Runner) RecordReloadFailure(ctx context.Context, by string, err error) {
	if aerr := r.db.Append(context.WithoutCancel(ctx), audit.ReloadRefusal(r.now().UTC(), by, err)); aerr != nil {
		r.log.Error("auditing reload failure", "err", aerr)
	}
}
