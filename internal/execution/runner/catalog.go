package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"sync"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/policy/policy"
)

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
func (s *Session) Tools(ctx context.Context) ([]ToolInfo, error) {
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
	listed := listable(gen.cfg, pol, r.upstreams.approved(ctx, gen.cfg))
	key := catalogKey(listed)
	return gen.catalogs.get(key, func() ([]ToolInfo, error) {
		out := make([]ToolInfo, 0, len(r.order))
		for _, name := range r.order {
			t := r.tools[name]
			info := gen.tools[name].info
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

// listable keeps the approved upstream tools pol does not deny outright.
func listable(cfg *config.Config, pol *policy.Policy, approved []toolkit.UpstreamTool) []toolkit.UpstreamTool {
	var out []toolkit.UpstreamTool
	for _, t := range approved {
		up, ok := cfg.Upstream(t.Upstream)
		if !ok {
			continue
		}
		var u *url.URL
		if !up.Stdio() {
			var err error
			if u, err = url.Parse(up.URL); err != nil {
				continue
			}
		}
		if pol.Listable("mcp."+t.Upstream+"."+t.Tool, u) {
			out = append(out, t)
		}
	}
	return out
}

// catalogKey fingerprints a catalog's content: the listed tools and their
// approved digests (a digest covers the description and schemas).
func catalogKey(listed []toolkit.UpstreamTool) string {
	h := sha256.New()
	for _, t := range listed {
		h.Write([]byte(t.Upstream + "\x00" + t.Tool + "\x00" + t.Digest + "\x01"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// maxCatalogs bounds one generation's cache of catalogs: contexts with
// different policies and pins changing over time each add one; past the
// bound the cache starts over (a rebuild costs a JSON encoding).
const maxCatalogs = 64

// catalogCache holds one generation's catalogs by catalogKey.
type catalogCache struct {
	mu sync.Mutex
	m  map[string][]ToolInfo
}

// get returns the cached tools for key, or builds and keeps them. The
// slice returned is shared: callers must not modify it.
func (c *catalogCache) get(key string, build func() ([]ToolInfo, error)) ([]ToolInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if tools, ok := c.m[key]; ok {
		return tools, nil
	}
	tools, err := build()
	if err != nil {
		return nil, err
	}
	if c.m == nil || len(c.m) >= maxCatalogs {
		c.m = map[string][]ToolInfo{}
	}
	c.m[key] = tools
	return tools, nil
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
	return catalogKey(r.upstreams.approved(ctx, cfg))
}
