package runner

import (
	"context"

	"github.com/airlock-dev/airlock/internal/execution/catalog"
)

// What clients are shown of the tools (package catalog): declarations only,
// never a way to execute them.

// Tools lists the tools' declarations for the configuration in force
// (run_pipeline's schema names its pipelines). It exposes no way to
// execute them.
func (r *Runner) Tools() []catalog.ToolInfo {
	gen := r.gen.Load()
	out := make([]catalog.ToolInfo, 0, len(r.order))
	for _, name := range r.order {
		out = append(out, gen.tools[name].Info)
	}
	return out
}

// Tools lists the tools' declarations as this session's context sees them
// now (issue 15): declare_need's comm.mcp catalog names only the upstream
// tools whose pin is approved and unchanged in the store at this moment,
// and that the context's policy does not deny outright
// ([policy.Policy.Listable]: a deny pattern, no allow, or an HTTP upstream
// whose host the network section refuses). A tool that needs approval, or
// whose rules judge the arguments, is listed: its fate depends on the call.
//
// The pins are read from the store on every call, so an approval made by
// `airlock upstreams approve` in another process, or a definition found
// changed by any process, shows in the next listing without a reload. The
// catalog itself is built once per configuration generation and set of
// listed tools (a bounded cache), so a listing costs a context read, a
// pins read and a hash. The catalog only advertises: every call is checked
// against the pins and the policy as they are when it runs.
func (s *Session) Tools(ctx context.Context) ([]catalog.ToolInfo, error) {
	r := s.r
	gen := r.gen.Load()
	if len(gen.cfg.Upstreams) == 0 {
		return r.Tools(), nil
	}
	chain, err := r.contextChain(ctx, s.contextID)
	if err != nil {
		return nil, err
	}
	pol, err := r.policyOf(chain[0])
	if err != nil {
		return nil, err
	}
	listed := catalog.Listable(gen.cfg, pol, r.upstreams.Approved(ctx, gen.cfg))
	key := catalog.Key(listed)
	return gen.catalogs.Get(key, func() ([]catalog.ToolInfo, error) {
		out := make([]catalog.ToolInfo, 0, len(r.order))
		for _, name := range r.order {
			t := r.tools[name]
			info := gen.tools[name].Info
			if t.Catalog != nil {
				schema, desc, err := t.Catalog(gen.cfg, listed)
				if err != nil {
					return nil, err
				}
				info.InputSchema, info.Description = schema, desc
			}
			out = append(out, info)
		}
		return out, nil
	})
}

// CatalogVersion fingerprints the upstream tool definitions usable now
// (approved and unchanged in the store, of configured upstreams): it
// changes when an approval, a rug pull seen by any process or a reload
// changes what some caller's catalog may list. "" with no upstreams.
// The server polls it to tell clients their tool list changed.
func (r *Runner) CatalogVersion(ctx context.Context) string {
	cfg := r.Config()
	if len(cfg.Upstreams) == 0 {
		return ""
	}
	return catalog.Key(r.upstreams.Approved(ctx, cfg))
}
