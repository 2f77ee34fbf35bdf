package operator

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/upstream"
	"github.com/airlock-dev/airlock/internal/policy/pinning"
)

// ErrUnknownTool: no pin for that upstream tool (never listed, or not
// refreshed yet).
var ErrUnknownTool = errors.New("no such upstream tool")

func (o *API) upstreamsOf() *upstream.Connector {
	if o.up == nil {
		o.up = upstream.New(o.db, &upstream.Options{Now: o.now, SandboxTrampoline: o.trampoline})
	}
	return o.up
}

// UseSandboxTrampoline sets the binary the sandbox re-executes for stdio
// upstreams (default: this executable, as for serve); tests pass a
// cgo-free build. Call it before the first refresh.
func (o *API) UseSandboxTrampoline(path string) { o.trampoline = path }

// RefreshUpstreams lists the tools of cfg's upstreams (only the one named
// id, if set) and brings their pins up to date, exactly as a call would:
// new tools become pending, changed ones are blocked, each change audited
// as seen by the operator. A stdio upstream runs in the sandbox here too.
// It returns one error per upstream that could not be listed.
func (o *API) RefreshUpstreams(ctx context.Context, cfg *config.Config, id, by string) map[string]error {
	errs := map[string]error{}
	for _, up := range cfg.Upstreams {
		if id != "" && up.ID != id {
			continue
		}
		if err := o.upstreamsOf().Review(ctx, cfg, up, by); err != nil {
			errs[up.ID] = err
		}
	}
	return errs
}

// UpstreamPins returns the pins of one upstream ("" for all).
func (o *API) UpstreamPins(ctx context.Context, upstream string) ([]*pinning.Pin, error) {
	return o.db.UpstreamPins(ctx, upstream)
}

// ApproveUpstreamTool approves the definition of upstream/tool that the
// operator reviewed: digest must be the digest of the definition the
// upstream lists now (the review shows it), or a prefix of it of at least
// pinning.MinDigestPrefix digits, else pinning.ErrStale — an approval
// never covers a definition the operator did not see. Audited either way,
// a success with the whole digest approved.
func (o *API) ApproveUpstreamTool(ctx context.Context, upstream, tool, digest, by string) (*pinning.Pin, error) {
	return o.ApproveUpstreamToolBecause(ctx, upstream, tool, digest, by, "")
}

// ApproveUpstreamToolBecause is ApproveUpstreamTool with the operator's
// reason, recorded in the audit record (the console requires one).
func (o *API) ApproveUpstreamToolBecause(ctx context.Context, upstream, tool, digest, by, why string) (*pinning.Pin, error) {
	var out *pinning.Pin
	err := o.db.UpdateUpstreamPins(ctx, upstream, func(cur map[string]*pinning.Pin) ([]*pinning.Pin, error) {
		p, ok := cur[tool]
		if !ok {
			return nil, fmt.Errorf("%s/%s: %w (run airlock upstreams review first)", upstream, tool, ErrUnknownTool)
		}
		ap, err := pinning.Approve(p, digest, "operator:"+by, o.now())
		if err != nil {
			return nil, err
		}
		out = ap
		return []*pinning.Pin{ap}, nil
	})
	rec := out
	if rec == nil {
		rec = &pinning.Pin{Upstream: upstream, Tool: tool, SeenDigest: digest}
	} else {
		// The record names the exact digest approved, not the prefix
		// typed (issue 24 item 6).
		digest = out.ApprovedDigest
	}
	o.upstreamsOf().AuditApproval(ctx, o.operator(by), rec, digest, why, err)
	if err != nil {
		return nil, err
	}
	return out, nil
}
