package runner

import (
	"context"
	"encoding/json"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/execution/comm"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/execution/upstream"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/policy"
)

// The runner's side of upstream MCP servers (issue 15; the connection,
// the pins and the egress are package upstream's): a comm.mcp need is
// checked against its pin while the tool expands it (upstreamPins), judged
// by the policy with the upstream's URL (upstream.PolicyURL), and executed by the
// broker (callUpstream).

// upstreamPins is one call's toolkit.UpstreamPins.
type upstreamPins struct{ c *call }

var _ toolkit.UpstreamPins = (*upstreamPins)(nil)

// Check implements toolkit.UpstreamPins.
func (p *upstreamPins) Check(ctx context.Context, upstream, tool string, args json.RawMessage) (string, error) {
	r := p.c.s.r
	return r.upstreams.Check(ctx, r.Config(), p.c.policy, p.c.rec, upstream, tool, args)
}

// callUpstream performs an approved comm.mcp need on the warm session of
// the caller's key (upstream.Connector.Call: listed again when a rug pull
// may have happened since, checked against the digest the need was checked
// against), with the role's brokered credentials (credentials.Set.
// ForUpstream; scrubbed from all it reads back), and returns the answer as
// untrusted content attributed to the upstream, the tool and the digest.
func (r *Runner) callUpstream(ctx context.Context, s *Session, pol *policy.Policy, need declarations.Need) (*toolkit.External, error) {
	cfg, p := r.Config(), need.Parameters
	up, ok := cfg.Upstream(p.Upstream)
	if !ok {
		return nil, violation.New(violation.UpstreamUnavailable, "no upstream %q is configured", p.Upstream)
	}
	if err := upstream.CheckURL(pol, up); err != nil {
		return nil, err
	}
	digest, err := r.upstreams.Check(ctx, cfg, pol, nil, p.Upstream, p.Tool, p.Arguments)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, upstream.Timeout(up), comm.ErrMCPTimeout)
	defer cancel()
	creds, err := r.creds.ForUpstream(ctx, s.role, up)
	if err != nil {
		return nil, upstream.CredentialViolation(up.ID, err)
	}
	res, err := r.upstreams.Call(ctx, cfg, up, upstream.Caller{Principal: s.principal, Role: s.role, Context: s.contextID, Policy: pol,
		Extra: &upstream.Extra{Headers: creds.Headers, Env: creds.Env, Scrub: creds.Scrubber.String}}, p.Tool, p.Arguments, digest)
	if err != nil {
		return nil, err
	}
	if int64(len(res.Text)) > up.MaxResultBytes {
		return nil, violation.New(violation.UpstreamResultTooLarge, "upstream %q: the answer of %q has %d bytes, more than max_result_bytes (%d)", p.Upstream, p.Tool, len(res.Text), up.MaxResultBytes)
	}
	details := map[string]any{"upstream": p.Upstream, "tool": p.Tool, "pinned_sha256": digest, "upstream_error": res.IsError, "omitted_blocks": res.Omitted}
	if res.IsError {
		details["code"] = string(violation.UpstreamError)
	}
	return &toolkit.External{Text: res.Text, Source: upstream.Source(p.Upstream, p.Tool, digest), ContentType: "text/plain",
		RetrievedAt: r.now().UTC(), Details: details, Scrub: creds.Scrubber.String}, nil
}
