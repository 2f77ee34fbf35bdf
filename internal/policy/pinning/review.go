package pinning

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/policy/poisoning"
)

// Decision is what an operator decided about an approved definition
// beyond its digest (issue 25): that the review's flags are overridden,
// and the description the agent's catalog shows instead of the
// upstream's. It belongs to one approved digest: the store keeps it only
// while the pin's ApprovedDigest is Digest, so a definition approved
// anew (the upstream changed it) never inherits an old override or an
// old edited description.
type Decision struct {
	Digest   string    `json:"digest"`
	Override bool      `json:"override,omitempty"`
	Score    float64   `json:"score"`             // the review's, of what reaches the agent, when decided
	Signals  []string  `json:"signals,omitempty"` // its signals
	Edited   *string   `json:"edited,omitempty"`  // the operator's description; nil: the upstream's
	By       string    `json:"by"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}

// Approval is how an operator approves a definition: Override the
// review's flags (a reason is then required), and Edited, a description
// of the operator's own for the catalog.
type Approval struct {
	Override bool
	Edited   *string
}

// The refusals of an approval after the review.
var (
	// ErrOverrideRequired: what would reach the agent is flagged (its
	// description or schema carries flagged instructions, names another
	// tool, or its name copies one); approving it needs an explicit
	// override.
	ErrOverrideRequired = errors.New("the review flags this definition: approving it needs an explicit override")
	// ErrReasonRequired: an override or an edited description needs the
	// operator's reason, for the audit trail.
	ErrReasonRequired = errors.New("an override or an edited description needs a reason")
	// ErrEditedDescription: an edited description that is empty, too
	// long, or holds characters a reader cannot see.
	ErrEditedDescription = errors.New("the edited description is not usable")
)

// maxEdited bounds an operator's description (the catalog shows 300
// characters of it on one line anyway).
const maxEdited = 2000

// checkEdited refuses an edited description the catalog could not show
// honestly.
func checkEdited(s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("%w: empty", ErrEditedDescription)
	case len(s) > maxEdited:
		return fmt.Errorf("%w: longer than %d bytes", ErrEditedDescription, maxEdited)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: not UTF-8", ErrEditedDescription)
	}
	for _, r := range s {
		if r != '\n' && r != '\t' && (unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Co, r)) {
			return fmt.Errorf("%w: holds U+%04X, which a reader cannot see", ErrEditedDescription, r)
		}
	}
	return nil
}

// Shown is the definition as the agent's catalog shows it: the approved
// one, with the operator's edited description in place of the
// upstream's while the decision belongs to the approved digest.
func (p *Pin) Shown() *Definition {
	if p == nil || p.Approved == nil {
		return nil
	}
	d := *p.Approved
	if p.Decision != nil && p.Decision.Digest == p.ApprovedDigest && p.Decision.Edited != nil {
		d.Description = *p.Decision.Edited
	}
	return &d
}

// Review reviews every pin's definition (the one listed now, else the
// approved one) against all the others, across upstreams: it sets each
// pin's Flags and Score in memory (the stored ones are of the
// definition alone, Observe's) and returns the reports by pin.
func Review(pins []*Pin) map[*Pin]poisoning.Report {
	cat := catalogOf(pins)
	out := make(map[*Pin]poisoning.Report, len(pins))
	for _, p := range pins {
		if t, ok := reviewed(p); ok {
			r := poisoning.Scan(t, cat)
			p.Flags, p.Score = flagsOf(r)
			out[p] = r
		}
	}
	return out
}

// reviewed is the definition of p the review reads: the one listed now,
// else the approved one (a tool no longer listed).
func reviewed(p *Pin) (poisoning.Tool, bool) {
	d := p.Seen
	if d == nil {
		d = p.Approved
	}
	if d == nil {
		return poisoning.Tool{}, false
	}
	t := toolOf(p.Upstream, *d)
	t.Approved = p.ApprovedDigest != ""
	return t, true
}

// catalogOf is every pin's definition as the scanner's catalog.
func catalogOf(pins []*Pin) *poisoning.Catalog {
	var tools []poisoning.Tool
	for _, p := range pins {
		if t, ok := reviewed(p); ok {
			tools = append(tools, t)
		}
	}
	return poisoning.NewCatalog(tools)
}

// ReviewShown reviews what would reach the agent if p's seen definition
// were approved with edited as its description (nil: the upstream's),
// among all (every upstream's pins, p among them or not).
func ReviewShown(p *Pin, edited *string, all []*Pin) poisoning.Report {
	if p.Seen == nil {
		return poisoning.Report{}
	}
	d := *p.Seen
	if edited != nil {
		d.Description = *edited
	}
	others := slices.DeleteFunc(slices.Clone(all), func(o *Pin) bool { return o.Upstream == p.Upstream && o.Tool == p.Tool })
	return poisoning.Scan(toolOf(p.Upstream, d), catalogOf(append(others, &Pin{Upstream: p.Upstream, Tool: p.Tool, Seen: &d})))
}

// ApproveReviewed approves p's seen definition as Approve does, after
// the review: shown is ReviewShown's report of what would reach the
// agent. A flagged one is approved only with a.Override; an override or
// an edited description only with a reason. The decision is kept with
// the pin (Pin.Decision) for the approved digest.
func ApproveReviewed(p *Pin, reviewedDigest, by, reason string, now time.Time, a Approval, shown poisoning.Report) (*Pin, error) {
	// First the digest (Approve's checks: a malformed or short one, a
	// definition no longer listed or not the one reviewed): if what the
	// operator reviewed is not what is listed, nothing they decided about
	// it applies.
	out, err := Approve(p, reviewedDigest, by, now)
	if err != nil {
		return nil, err
	}
	if a.Edited != nil {
		if err := checkEdited(*a.Edited); err != nil {
			return nil, err
		}
	}
	switch {
	case shown.Flagged && !a.Override:
		return nil, fmt.Errorf("%s/%s: %w (score %.2f: %s)", p.Upstream, p.Tool, ErrOverrideRequired, shown.Score, signalList(shown))
	case (a.Override || a.Edited != nil) && strings.TrimSpace(reason) == "":
		return nil, fmt.Errorf("%s/%s: %w", p.Upstream, p.Tool, ErrReasonRequired)
	}
	out.Decision = nil
	if a.Override || a.Edited != nil {
		var sigs []string
		for _, s := range shown.Signals() {
			sigs = append(sigs, string(s))
		}
		out.Decision = &Decision{Digest: out.ApprovedDigest, Override: a.Override && shown.Flagged, Score: shown.Score, Signals: sigs,
			Edited: a.Edited, By: by, Reason: reason, At: now.UTC()}
	}
	return out, nil
}

func signalList(r poisoning.Report) string {
	var s []string
	for _, sig := range r.Signals() {
		s = append(s, string(sig))
	}
	return strings.Join(s, ", ")
}
