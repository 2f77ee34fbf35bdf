package runner

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/airlock-dev/airlock/config"
	"github.com/airlock-dev/airlock/policy"
	"github.com/airlock-dev/airlock/store"
)

// generation is one loaded configuration and its compiled policies.
type generation struct {
	cfg      *config.Config
	policies *policy.Set
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
	rec := &store.Record{
		Time: r.now().UTC(), Principal: "operator:" + by, Transport: "signal", Capability: "operator.reload",
		Decision: "allow", Outcome: "ok", Reason: "configuration reloaded from " + cfg.File(),
	}
	if err != nil {
		rec.Outcome, rec.Reason, rec.Error = "error", "reload refused; previous configuration kept", err.Error()
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
	policies, err := cfg.PolicySet()
	if err != nil {
		return fmt.Errorf("compiling policies: %w", err)
	}
	r.gen.Store(&generation{cfg: cfg, policies: policies})
	return nil
}

// RecordReloadFailure audits a reload whose configuration did not even load.
func (r *Runner) RecordReloadFailure(ctx context.Context, by string, err error) {
	rec := &store.Record{
		Time: r.now().UTC(), Principal: "operator:" + by, Transport: "signal", Capability: "operator.reload",
		Decision: "deny", Outcome: "denied", Reason: "reload refused; previous configuration kept", Error: err.Error(),
	}
	if aerr := r.db.Append(context.WithoutCancel(ctx), rec); aerr != nil {
		r.log.Error("auditing reload failure", "err", aerr)
	}
}
