package cli

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/airlock-dev/airlock/internal/policy/pinning"
	"github.com/airlock-dev/airlock/internal/policy/poisoning"
)

// approveFlags are `airlock upstreams approve`'s choices beyond the
// digest (issue 25): an override of the review's flags, and a
// description of the operator's own for the agent's catalog.
type approveFlags struct {
	override        bool
	description     string
	descriptionFile string
}

func (a *approveFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&a.override, "override", false, "approve: approve a definition the review flags (needs --reason; audited as an override)")
	fs.StringVar(&a.description, "description", "", "approve: the description the agent's catalog shows instead of the upstream's (needs --reason)")
	fs.StringVar(&a.descriptionFile, "description-file", "", "approve: as --description, read from FILE")
}

// approval is the flags as the operator's API takes them, for an
// approval of n definitions: an edited description is one tool's.
func (a *approveFlags) approval(n int) (pinning.Approval, error) {
	out := pinning.Approval{Override: a.override}
	switch {
	case (a.description != "" || a.descriptionFile != "") && n > 1:
		return out, fmt.Errorf("--description is one tool's: approve that tool on its own: %w", ErrUsage)
	case a.description != "" && a.descriptionFile != "":
		return out, fmt.Errorf("--description and --description-file: one or the other: %w", ErrUsage)
	case a.descriptionFile != "":
		b, err := os.ReadFile(a.descriptionFile)
		if err != nil {
			return out, fmt.Errorf("reading --description-file: %w", err)
		}
		s := string(b)
		out.Edited = &s
	case a.description != "":
		out.Edited = &a.description
	}
	return out, nil
}

// printFlags prints a pin's review: its score and verdict, each finding
// (signal, weight, field, why, excerpt quoted so hidden characters show
// as escapes), and the operator's decision on the approved definition.
func printFlags(io Streams, p *pinning.Pin) {
	if p.Seen != nil {
		verdict := "not flagged"
		if flagged(p) {
			verdict = "FLAGGED: approving it needs --override and --reason"
		}
		fmt.Fprintf(io.Out, "  review:      score %.2f, %s\n", p.Score, verdict)
	}
	for _, f := range p.Flags {
		sig := f.Signal
		if sig == "" {
			sig = "flag"
		}
		line := fmt.Sprintf("  FLAG %s %.1f %s: %s", sig, f.Weight, f.Field, f.Reason)
		if f.Excerpt != "" {
			line += " — " + strconv.Quote(f.Excerpt)
		}
		fmt.Fprintln(io.Out, line)
	}
	if d := p.Decision; d != nil {
		what := "approved"
		if d.Override {
			what = fmt.Sprintf("approved over the review's flags (score %.2f)", d.Score)
		}
		fmt.Fprintf(io.Out, "  decision:    %s by %s: %s\n", what, d.By, strconv.Quote(d.Reason))
		if d.Edited != nil {
			fmt.Fprintf(io.Out, "  shown:       %s (the operator's description, in the catalog instead of the upstream's)\n", strconv.Quote(*d.Edited))
		}
	}
}

// flagged: the review flags the definition listed now.
func flagged(p *pinning.Pin) bool { return p.Seen != nil && p.Score >= poisoning.Threshold }

// overrideHint completes the "approve with" line of a flagged definition.
func overrideHint(p *pinning.Pin) string {
	if flagged(p) {
		return ` --override --reason "…"  (or --description TEXT to show the agent your own)`
	}
	return ""
}

// reviewedTool is one definition in `airlock upstreams review --json`: a
// stable shape for tooling that gates approvals on the review.
type reviewedTool struct {
	Upstream         string            `json:"upstream"`
	Tool             string            `json:"tool"`
	State            pinning.State     `json:"state"`
	SeenDigest       string            `json:"seen_digest,omitempty"`
	ApprovedDigest   string            `json:"approved_digest,omitempty"`
	ApprovedBy       string            `json:"approved_by,omitempty"`
	ApprovedAt       *time.Time        `json:"approved_at,omitempty"`
	Description      *string           `json:"description,omitempty"` // listed now
	Score            float64           `json:"score"`
	Flagged          bool              `json:"flagged"`
	OverrideRequired bool              `json:"override_required"` // approving the listed definition as is needs an override
	Signals          []string          `json:"signals"`
	Findings         []pinning.Flag    `json:"findings"`
	Diff             []string          `json:"diff,omitempty"`
	Decision         *pinning.Decision `json:"decision,omitempty"`
	Approve          []string          `json:"approve,omitempty"` // the command's argv that approves the listed definition
}

// printReviewJSON prints the review as one JSON document: {"threshold":
// …, "signals": {name: explanation}, "tools": […]}.
func printReviewJSON(io Streams, pins []*pinning.Pin) error {
	out := struct {
		Threshold float64           `json:"threshold"`
		Signals   map[string]string `json:"signals"` // every signal's explanation
		Tools     []reviewedTool    `json:"tools"`
	}{Threshold: poisoning.Threshold, Signals: map[string]string{}, Tools: []reviewedTool{}}
	for _, s := range poisoning.Signals() {
		out.Signals[string(s)] = s.Explain()
	}
	for _, p := range pins {
		r := reviewedTool{Upstream: p.Upstream, Tool: p.Tool, State: p.State, SeenDigest: p.SeenDigest, ApprovedDigest: p.ApprovedDigest,
			ApprovedBy: p.ApprovedBy, Score: p.Score, Flagged: p.Score >= poisoning.Threshold, Signals: []string{}, Findings: []pinning.Flag{},
			Diff: pinning.Diff(p), Decision: p.Decision}
		if !p.ApprovedAt.IsZero() {
			at := p.ApprovedAt
			r.ApprovedAt = &at
		}
		if p.Seen != nil {
			r.Description = &p.Seen.Description
			r.OverrideRequired = r.Flagged
			if p.State != pinning.Approved {
				r.Approve = []string{"airlock", "upstreams", "approve", p.Upstream, p.Tool, p.SeenDigest}
			}
		}
		for _, f := range p.Flags {
			r.Findings = append(r.Findings, f)
			if f.Signal != "" && !slices.Contains(r.Signals, f.Signal) {
				r.Signals = append(r.Signals, f.Signal)
			}
		}
		out.Tools = append(out.Tools, r)
	}
	enc := json.NewEncoder(io.Out)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
