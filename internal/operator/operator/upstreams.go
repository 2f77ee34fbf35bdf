package operator

import (
	"context"
	"errors"
	"slices"

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

// UpstreamPins returns the pins of one upstream ("" for all), each with
// the review's flags and score across every upstream's tools
// (pinning.Review: look-alike names, a description naming another
// upstream's tool), as the review shows them.
func (o *API) UpstreamPins(ctx context.Context, upstream string) ([]*pinning.Pin, error) {
	all, err := o.db.UpstreamPins(ctx, "")
	if err != nil {
		return nil, err
	}
	pinning.Review(all)
	if upstream == "" {
		return all, nil
	}
	return slices.DeleteFunc(all, func(p *pinning.Pin) bool { return p.Upstream != upstream }), nil
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
	return o.ApproveUpstreamToolAs(ctx, upstream, tool, digest, by, why, pinning.Approval{})
}
