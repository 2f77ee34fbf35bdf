package operator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/policy/pinning"
	"github.com/airlock-dev/airlock/internal/policy/poisoning"
)

// ApproveUpstreamToolAs approves after the review (issue 25): what would
// reach the agent (the definition, with a.Edited as its description if
// set) is reviewed against every upstream's tools, and a flagged one is
// approved only with a.Override and a reason (pinning.ApproveReviewed:
// pinning.ErrOverrideRequired, pinning.ErrReasonRequired). An override
// or an edited description is kept with the pin for this digest and
// audited as operator.upstream_override; a plain approval as
// operator.upstream_approve. Refusals are audited too.
func (o *API) ApproveUpstreamToolAs(ctx context.Context, upstream, tool, digest, by, why string, a pinning.Approval) (*pinning.Pin, error) {
	all, err := o.db.UpstreamPins(ctx, "") // the catalog the review compares with
	if err != nil {
		return nil, err
	}
	var out *pinning.Pin
	var shown poisoning.Report
	err = o.db.UpdateUpstreamPins(ctx, upstream, func(cur map[string]*pinning.Pin) ([]*pinning.Pin, error) {
		p, ok := cur[tool]
		if !ok {
			return nil, fmt.Errorf("%s/%s: %w (run airlock upstreams review first)", upstream, tool, ErrUnknownTool)
		}
		shown = pinning.ReviewShown(p, a.Edited, all)
		ap, err := pinning.ApproveReviewed(p, digest, "operator:"+by, why, o.now(), a, shown)
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
	if a.Override || a.Edited != nil {
		o.upstreamsOf().AuditOverride(ctx, o.operator(by), rec, digest, overrideOf(why, a, shown), err)
	} else {
		o.upstreamsOf().AuditApproval(ctx, o.operator(by), rec, digest, why, err)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// overrideOf is an approval's decision as its audit record names it:
// never the edited text, its SHA-256.
func overrideOf(why string, a pinning.Approval, shown poisoning.Report) audit.Override {
	o := audit.Override{Reason: why, Overridden: a.Override && shown.Flagged, Score: shown.Score}
	for _, s := range shown.Signals() {
		o.Signals = append(o.Signals, string(s))
	}
	if a.Edited != nil {
		sum := sha256.Sum256([]byte(*a.Edited))
		o.EditedSHA256 = hex.EncodeToString(sum[:])
	}
	return o
}
