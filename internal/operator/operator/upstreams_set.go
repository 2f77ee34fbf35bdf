package operator

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/airlock-dev/airlock/internal/policy/pinning"
)

// Approving an upstream's reviewed set at once (issue 23 item 4): the
// review records what it showed (RecordReview), and ApproveUpstreamSet
// approves exactly that — the recorded digests, or those the console's
// page showed — in one store transaction, or nothing.

// SetApproval is the outcome of ApproveUpstreamSet.
type SetApproval struct {
	// Approved are the pins approved, each with its whole digest.
	Approved []*pinning.Pin
	// LeftOut are the reviewed definitions the review flags: never
	// swept into a set, each is approved on its own with an override.
	LeftOut []*pinning.Pin
}

// RecordReview records that by's review showed pins (as UpstreamPins
// returned them): per upstream, in one transaction, each listed pin is
// marked with the digest shown (pinning.MarkReviewed). A definition that
// changed between the showing and the recording keeps the digest shown,
// so a set approval refuses it.
func (o *API) RecordReview(ctx context.Context, pins []*pinning.Pin, by string) error {
	shown := map[string]map[string]string{}
	for _, p := range pins {
		if p.Seen == nil {
			continue
		}
		if shown[p.Upstream] == nil {
			shown[p.Upstream] = map[string]string{}
		}
		shown[p.Upstream][p.Tool] = p.SeenDigest
	}
	var errs []error
	for _, up := range slices.Sorted(maps.Keys(shown)) {
		errs = append(errs, o.db.UpdateUpstreamPins(ctx, up, func(cur map[string]*pinning.Pin) ([]*pinning.Pin, error) {
			var out []*pinning.Pin
			for tool, d := range shown[up] {
				if p, ok := cur[tool]; ok {
					out = append(out, pinning.MarkReviewed(p, d, "operator:"+by, o.now()))
				}
			}
			return out, nil
		}))
	}
	return errors.Join(errs...)
}

// ApproveUpstreamSet approves, in one store transaction, every definition
// of upstream a review showed — shown (tool → digest or prefix) as the
// console's page carries it, or nil for the digests the last recorded
// review showed (pinning.ErrNotReviewed without one) — leaving out those
// the review flags. If the approvable definitions are not exactly those
// shown (pinning.SetChanges), nothing is approved: a
// *pinning.SetChangedError. Each approval is audited with its whole
// digest; a refused set is audited as a refusal of each definition in it.
func (o *API) ApproveUpstreamSet(ctx context.Context, upstream string, shown map[string]string, by, why string) (*SetApproval, error) {
	all, err := o.db.UpstreamPins(ctx, "") // the catalog the review compares with
	if err != nil {
		return nil, err
	}
	var res SetApproval
	var want map[string]string
	var tried []*pinning.Pin
	err = o.db.UpdateUpstreamPins(ctx, upstream, func(cur map[string]*pinning.Pin) ([]*pinning.Pin, error) {
		res, tried, want = SetApproval{}, nil, shown
		for _, tool := range slices.Sorted(maps.Keys(cur)) {
			if pinning.Approvable(cur[tool]) {
				tried = append(tried, cur[tool])
			}
		}
		if want == nil {
			var err error
			if want, err = pinning.ReviewedSet(cur); err != nil {
				return nil, err
			}
		}
		changes, err := pinning.SetChanges(cur, want)
		switch {
		case err != nil:
			return nil, err
		case len(changes) > 0:
			return nil, &pinning.SetChangedError{Upstream: upstream, Changes: changes}
		}
		for _, p := range tried {
			shownReport := pinning.ReviewShown(p, nil, all)
			if shownReport.Flagged {
				res.LeftOut = append(res.LeftOut, p)
				continue
			}
			ap, err := pinning.ApproveReviewed(p, want[p.Tool], "operator:"+by, why, o.now(), pinning.Approval{}, shownReport)
			if err != nil {
				return nil, err
			}
			res.Approved = append(res.Approved, ap)
		}
		if len(res.Approved) == 0 {
			return nil, pinning.ErrNothingToApprove
		}
		return res.Approved, nil
	})
	if errors.Is(err, pinning.ErrNothingToApprove) {
		return &res, err // nothing decided: only flagged definitions wait
	}
	if err != nil {
		for _, p := range tried {
			d := want[p.Tool]
			if d == "" {
				d = p.SeenDigest
			}
			o.upstreamsOf().AuditApproval(ctx, o.operator(by), p, d, why, err)
		}
		return nil, err
	}
	for _, p := range res.Approved {
		o.upstreamsOf().AuditApproval(ctx, o.operator(by), p, p.ApprovedDigest, why, nil)
	}
	return &res, nil
}
