package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/policy/pinning"
)

// maxReviewSchema bounds a schema printed in the review.
const maxReviewSchema = 4000

// runUpstreams is the operator's review of upstream MCP tool definitions
// (issue 15): review lists each upstream's tools (refreshing them from the
// upstreams first, so a new or changed definition shows), with its flags
// and, for a changed one, the diff, and the commands that approve them —
// one per tool, and one for all of an upstream's at once; approve approves
// each definition whose digest (or a prefix of at least 16 hex digits of
// it) the review printed, one audit record each; approve UPSTREAM --all
// approves what the last review showed (upstreams_all.go).
func runUpstreams(ctx context.Context, args []string, io Streams) error {
	usage := fmt.Errorf("airlock upstreams review [UPSTREAM] [--config FILE] [--offline] [--json] [--state DIR] | approve UPSTREAM (TOOL SHA256 [TOOL SHA256]... | --all [--config FILE]) [--reason TEXT] [--override] [--description TEXT | --description-file FILE] [--state DIR]: %w", ErrUsage)
	if len(args) == 0 {
		return usage
	}
	if args[0] == "status" {
		return runUpstreamsStatus(ctx, args[1:], io)
	}
	verb, rest := args[0], args[1:]
	var pos []string
	for len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		pos, rest = append(pos, rest[0]), rest[1:]
	}
	fs := newFlags("upstreams "+verb, io)
	state := fs.String("state", "", "state directory")
	cfgPath := fs.String("config", "", "review: configuration naming the upstreams (default: the embedded demo, as for serve)")
	offline := fs.Bool("offline", false, "review: show the stored pins without listing the upstreams again")
	reason := fs.String("reason", "", "approve: why (recorded in the audit trail with the digest, as the console's required reason is)")
	jsonOut := fs.Bool("json", false, "review: print each definition's review (signals, score) as JSON, for gating approvals in other tooling")
	all := fs.Bool("all", false, "approve: every definition the last review showed, listed again first; refused whole if any changed since")
	var how approveFlags
	how.register(fs)
	if err := parse(fs, rest); err != nil {
		return err
	}
	var pairs []toolDigest
	switch {
	case verb == "review" && len(pos) <= 1 && !*all:
	case verb == "approve" && *all && len(pos) == 1:
		if how.override || how.description != "" || how.descriptionFile != "" {
			return fmt.Errorf("--all approves only what the review does not flag; approve a flagged tool on its own with --override: %w", ErrUsage)
		}
	case verb == "approve" && !*all && len(pos) >= 3 && len(pos)%2 == 1:
		// Every digest is checked before anything is opened: a typo is
		// a usage error that changes and audits nothing.
		var err error
		if pairs, err = parsePairs(pos[1:]); err != nil {
			return err
		}
	default:
		return usage
	}
	// A review may come before the first serve: the state directory is
	// created as serve creates it.
	dir, err := stateDir(*state)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating state dir: %w", err)
	}
	op, err := operator.Open(dir, false)
	if err != nil {
		return err
	}
	defer op.Close()
	if verb == "approve" && *all {
		return approveAll(ctx, op, *cfgPath, dir, pos[0], *reason, io)
	}
	if verb == "approve" {
		a, err := how.approval(len(pairs))
		if err != nil {
			return err
		}
		return approveTools(ctx, op, pos[0], pairs, *reason, a, io)
	}
	only := ""
	if len(pos) == 1 {
		only = pos[0]
	}
	failed := false
	if !*offline {
		cfg, release, err := loadConfig(*cfgPath)
		if err != nil {
			return err
		}
		defer release()
		errs := op.RefreshUpstreams(ctx, cfg, only, operatorName())
		for _, id := range slices.Sorted(maps.Keys(errs)) {
			failed = true
			fmt.Fprintf(io.Err, "airlock: upstream %s could not be listed: %v\n", id, errs[id])
		}
	}
	pins, err := op.UpstreamPins(ctx, only)
	if err != nil {
		return err
	}
	// What is printed is what a later approve --all takes.
	if err := op.RecordReview(ctx, pins, operatorName()); err != nil {
		return err
	}
	if *jsonOut {
		if err := printReviewJSON(io, pins); err != nil {
			return err
		}
	} else {
		printReview(io, pins)
	}
	if failed {
		return fmt.Errorf("some upstreams could not be listed: %w", ErrFailed)
	}
	return nil
}

// toolDigest is one TOOL SHA256 pair of `upstreams approve`.
type toolDigest struct{ tool, digest string }

// parsePairs reads TOOL SHA256 pairs: each digest as the review prints it
// (pinning.ParseDigest says what is wrong with one that is not), each tool
// once.
func parsePairs(args []string) ([]toolDigest, error) {
	var out []toolDigest
	seen := map[string]bool{}
	for i := 0; i+1 < len(args); i += 2 {
		tool := args[i]
		d, err := pinning.ParseDigest(args[i+1])
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %w", tool, err, ErrUsage)
		}
		if seen[tool] {
			return nil, fmt.Errorf("tool %s is named twice: %w", tool, ErrUsage)
		}
		seen[tool] = true
		out = append(out, toolDigest{tool, d})
	}
	return out, nil
}

// approveTools approves each pair, each on its own (one transaction and
// one audit record each, naming the exact digest approved), and prints
// every outcome: a definition that changed since the review is refused
// while the others, which are what the operator reviewed, are approved.
func approveTools(ctx context.Context, op *operator.API, upstream string, pairs []toolDigest, reason string, a pinning.Approval, io Streams) error {
	var errs []error
	for _, pr := range pairs {
		p, err := op.ApproveUpstreamToolAs(ctx, upstream, pr.tool, pr.digest, operatorName(), reason, a)
		if err != nil {
			fmt.Fprintf(io.Out, "NOT approved %s/%s: %v\n", upstream, pr.tool, err)
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(io.Out, "approved %s/%s sha256:%s\n", p.Upstream, p.Tool, p.ApprovedDigest)
	}
	if len(errs) < len(pairs) {
		fmt.Fprintln(io.Out, "A running server lists what was approved in declare_need's catalog from the next tools/list (to callers whose policy may use it) and tells connected clients; calls may use it now.")
	}
	return errors.Join(errs...)
}

// printReview shows each pin: what is listed now (quoted, so invisible
// and bidi characters show as escapes), its flags, what changed since the
// approval, and the command that approves exactly this definition; then,
// per upstream with more than one definition waiting, the one command
// that approves them all, each by its exact digest.
func printReview(io Streams, pins []*pinning.Pin) {
	if len(pins) == 0 {
		fmt.Fprintln(io.Out, "no upstream tools seen yet")
		return
	}
	waiting := map[string][]*pinning.Pin{}
	var ups []string
	for _, p := range pins {
		fmt.Fprintf(io.Out, "%s/%s  %s\n", p.Upstream, p.Tool, strings.ToUpper(string(p.State)))
		if p.ApprovedDigest != "" {
			fmt.Fprintf(io.Out, "  approved:    sha256:%s by %s at %s\n", p.ApprovedDigest, p.ApprovedBy, p.ApprovedAt.Format("2006-01-02T15:04:05Z"))
		}
		if p.Seen == nil {
			fmt.Fprintln(io.Out, "  no longer listed by the upstream")
			continue
		}
		fmt.Fprintf(io.Out, "  listed now:  sha256:%s\n", p.SeenDigest)
		fmt.Fprintf(io.Out, "  description: %s\n", strconv.Quote(p.Seen.Description))
		if len(p.Seen.InputSchema) > 0 {
			fmt.Fprintf(io.Out, "  input:       %s\n", short(strconv.Quote(string(p.Seen.InputSchema)), maxReviewSchema))
		}
		if len(p.Seen.OutputSchema) > 0 {
			fmt.Fprintf(io.Out, "  output:      %s\n", short(strconv.Quote(string(p.Seen.OutputSchema)), maxReviewSchema))
		}
		printFlags(io, p)
		for _, d := range pinning.Diff(p) {
			fmt.Fprintf(io.Out, "  CHANGED %s\n", d)
		}
		if p.State != pinning.Approved {
			fmt.Fprintf(io.Out, "  approve with: airlock upstreams approve %s %s %s%s\n", p.Upstream, p.Tool, p.SeenDigest, overrideHint(p))
			if flagged(p) {
				continue // approved on its own, with --override: never swept into a set
			}
			if waiting[p.Upstream] == nil {
				ups = append(ups, p.Upstream)
			}
			waiting[p.Upstream] = append(waiting[p.Upstream], p)
		}
	}
	for _, up := range ups {
		if w := waiting[up]; len(w) > 1 {
			fmt.Fprintf(io.Out, "approve all %d of %s above, each as reviewed, with:\n  airlock upstreams approve %s", len(w), up, up)
			for _, p := range w {
				fmt.Fprintf(io.Out, " \\\n    %s %s", p.Tool, p.SeenDigest)
			}
			fmt.Fprintf(io.Out, "\n  or: airlock upstreams approve %s --all  (lists %s again and refuses the set if anything changed)\n", up, up)
		}
	}
}
