// Package catalog is what clients are shown of the tools: each tool's
// declaration under one configuration (name, annotations, description, input
// schema — and the validator compiled from exactly that schema, so what the
// agent is told it may send and what the runner accepts cannot drift
// apart), and declare_need's comm.mcp catalog as one caller sees it (issue
// 15): the approved, unchanged upstream tools its context's policy does
// not deny outright, kept in a bounded cache per configuration.
//
// The invariant it keeps: a catalog only advertises. Every call is checked
// against the pins and the policy as they are when it runs (the runner);
// nothing here executes a tool or lets a caller do so.
package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"sync"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/argschema"
	"github.com/airlock-dev/airlock/internal/policy/policy"
)

// ToolInfo is a tool's public declaration, for registering it with a transport.
type ToolInfo struct {
	Name, Title, Description         string
	Tier                             toolkit.Tier
	ReadOnly, Destructive, OpenWorld bool
	InputSchema, OutputSchema        []byte
}

// Tool is a tool as declared under one configuration: what clients are
// shown, and the validator compiled from exactly that schema.
type Tool struct {
	Info      ToolInfo
	Validator *argschema.Validator
}

// Declare declares t under cfg; upstreams is the comm.mcp catalog its
// description and schema name (nil: none).
func Declare(t toolkit.Tool, cfg *config.Config, upstreams []toolkit.UpstreamTool) (Tool, error) {
	schema, desc := t.InputSchema, t.Description
	if t.Catalog != nil {
		var err error
		if schema, desc, err = t.Catalog(cfg, upstreams); err != nil {
			return Tool{}, fmt.Errorf("tool %s: %w", t.Name, err)
		}
	}
	v, err := argschema.Compile(t.Name, schema)
	if err != nil {
		return Tool{}, err
	}
	return Tool{Validator: v, Info: ToolInfo{
		Name: t.Name, Title: t.Title, Description: desc, Tier: t.Tier,
		ReadOnly: t.ReadOnly, Destructive: t.Destructive, OpenWorld: t.OpenWorld,
		InputSchema: schema, OutputSchema: t.OutputSchema,
	}}, nil
}

// Listable keeps the approved upstream tools pol does not deny outright
// ([Lists]). A tool that needs approval, or whose rules judge the
// arguments, is listed: its fate depends on the call.
func Listable(cfg *config.Config, pol *policy.Policy, approved []toolkit.UpstreamTool) []toolkit.UpstreamTool {
	var out []toolkit.UpstreamTool
	for _, t := range approved {
		if _, ok := cfg.Upstream(t.Upstream); ok && Lists(cfg, pol, t.Upstream, t.Tool) {
			out = append(out, t)
		}
	}
	return out
}

// Lists reports whether pol could allow some call of the tool of upstream
// ([policy.Policy.Listable]): no deny pattern, an allow in every policy of
// the chain, and for a configured HTTP upstream a host the network section
// allows. It is the catalog's criterion, and the runner's first question
// about a comm.mcp need (issue 26, item 6): what a caller's catalog cannot
// list is POLICY_DENIED before anything reveals whether the tool exists,
// is pending or takes which arguments. An upstream that is not configured
// is judged by the patterns alone.
func Lists(cfg *config.Config, pol *policy.Policy, upstream, tool string) bool {
	var u *url.URL
	if up, ok := cfg.Upstream(upstream); ok && !up.Stdio() {
		var err error
		if u, err = url.Parse(up.URL); err != nil {
			return false
		}
	}
	return pol.Listable(policy.MCPPrefix+upstream+"."+tool, u)
}

// Key fingerprints a catalog's content: the listed tools, their
// approved digests (a digest covers the upstream's description and
// schemas) and the descriptions shown (an operator's edited description
// changes what is shown under the same digest: issue 25).
func Key(listed []toolkit.UpstreamTool) string {
	h := sha256.New()
	for _, t := range listed {
		d := sha256.Sum256([]byte(t.Description))
		h.Write([]byte(t.Upstream + "\x00" + t.Tool + "\x00" + t.Digest + "\x00" + hex.EncodeToString(d[:]) + "\x01"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// maxCatalogs bounds one generation's cache of catalogs: contexts with
// different policies and pins changing over time each add one; past the
// bound the cache starts over (a rebuild costs a JSON encoding).
const maxCatalogs = 64

// Cache holds one configuration's catalogs by Key. The zero value is
// empty and ready; it is safe for concurrent use.
type Cache struct {
	mu sync.Mutex
	m  map[string][]ToolInfo
}

// Get returns the cached tools for key, or builds and keeps them. The
// slice returned is shared: callers must not modify it.
func (c *Cache) Get(key string, build func() ([]ToolInfo, error)) ([]ToolInfo, error) {
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
