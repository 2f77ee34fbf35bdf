package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/policy/pinning"
)

// approveAll is `airlock upstreams approve UPSTREAM --all` (issue 23 item
// 4): it lists the upstream again, as the review does (so a change the
// upstream made since is seen now, not at the next call), then approves
// in one transaction exactly the digests the last review recorded
// (operator.API.ApproveUpstreamSet), printing and auditing each whole
// digest. Anything changed since the review — a definition listed
// differently, a tool new or gone, one approved otherwise — refuses the
// whole set, printing what changed: review again and approve what it
// shows. Definitions the review flags are left out, as the review's
// "approve all" command leaves them: each needs --override on its own.
func approveAll(ctx context.Context, op *operator.API, cfgPath, dir, upstream, reason string, io Streams) error {
	cfg, release, err := loadConfig(cfgPath)
	if err != nil {
		return err
	}
	defer release()
	if _, ok := cfg.Upstream(upstream); !ok {
		return fmt.Errorf("no upstream %q in the configuration (pass the one the review used with --config): %w", upstream, ErrUsage)
	}
	if errs := op.RefreshUpstreams(ctx, cfg, upstream, operatorName()); errs[upstream] != nil {
		fmt.Fprintf(io.Out, "NOT approved: upstream %s could not be listed again to check the set: %v\n", upstream, errs[upstream])
		return fmt.Errorf("upstream %s could not be listed: %w", upstream, ErrFailed)
	}
	res, err := op.ApproveUpstreamSet(ctx, upstream, nil, operatorName(), reason)
	var changed *pinning.SetChangedError
	switch {
	case errors.As(err, &changed):
		fmt.Fprintf(io.Out, "NOT approved: %s changed since the last review; nothing was approved:\n", upstream)
		for _, c := range changed.Changes {
			fmt.Fprintf(io.Out, "  %s\n", c)
		}
		fmt.Fprintf(io.Out, "Review it again (airlock upstreams review %s) and approve what it shows.\n", upstream)
		return err
	case errors.Is(err, pinning.ErrNotReviewed):
		fmt.Fprintf(io.Out, "NOT approved: no review of %s is recorded; run airlock upstreams review %s first.\n", upstream, upstream)
		return err
	case err != nil && !errors.Is(err, pinning.ErrNothingToApprove):
		fmt.Fprintf(io.Out, "NOT approved: %v\n", err)
		return err
	}
	for _, p := range res.Approved {
		fmt.Fprintf(io.Out, "approved %s/%s sha256:%s\n", p.Upstream, p.Tool, p.ApprovedDigest)
	}
	for _, p := range res.LeftOut {
		fmt.Fprintf(io.Out, "left out %s/%s sha256:%s: the review flags it; approve it on its own with --override --reason\n", p.Upstream, p.Tool, p.SeenDigest)
	}
	if err != nil {
		fmt.Fprintf(io.Out, "nothing approved: %v\n", err)
		return err
	}
	fmt.Fprintln(io.Out, "A running server lists what was approved in declare_need's catalog from the next tools/list (to callers whose policy may use it) and tells connected clients; calls may use it now.")
	return nil
}
