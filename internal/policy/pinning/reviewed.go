package pinning

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Approving the reviewed set at once (issue 23 item 4). An operator's
// review records, per tool, the digest it showed ([MarkReviewed]); a set
// approval takes the digests a review showed — recorded so, or carried by
// the console's form — and approves them only if the upstream's
// approvable definitions are still exactly those ([SetChanges]): a tool
// new since the review, one listed differently, one gone or approved
// otherwise since, refuses the whole set. An approval by set never
// covers a definition the operator was not shown, and a rug pull between
// the review and the approval approves nothing.

// Reviewed is the definition of a pin an operator's review showed.
type Reviewed struct {
	Digest string    `json:"digest"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// ErrNotReviewed: a set approval of an upstream no review was recorded
// for (run `airlock upstreams review` first).
var ErrNotReviewed = errors.New("no review of this upstream is recorded")

// ErrNothingToApprove: the reviewed set holds no definition that waits
// for an approval and is not flagged.
var ErrNothingToApprove = errors.New("nothing in the reviewed set waits for an approval")

// SetChangedError refuses a set approval: what the upstream lists now is
// not what the review showed. Changes says what differs, one line per
// tool. It wraps ErrStale.
type SetChangedError struct {
	Upstream string
	Changes  []string
}

func (e *SetChangedError) Error() string {
	return fmt.Sprintf("%s: the set changed since the review, nothing was approved: %s", e.Upstream, strings.Join(e.Changes, "; "))
}

func (e *SetChangedError) Unwrap() error { return ErrStale }

// MarkReviewed returns p recording that by's review showed digest (a
// copy; p is not changed).
func MarkReviewed(p *Pin, digest, by string, now time.Time) *Pin {
	out := *p
	out.Reviewed = &Reviewed{Digest: digest, By: by, At: now.UTC()}
	return &out
}

// Approvable reports whether p waits for an approval: listed now, and
// not approved as listed.
func Approvable(p *Pin) bool {
	return p != nil && p.Seen != nil && p.SeenDigest != "" && p.State != Approved
}

// ReviewedSet is the set the last recorded review showed of an
// upstream's pins (by tool): each digest it recorded. It is
// ErrNotReviewed when no pin carries a review.
func ReviewedSet(pins map[string]*Pin) (map[string]string, error) {
	out := map[string]string{}
	for tool, p := range pins {
		if p.Reviewed != nil {
			out[tool] = p.Reviewed.Digest
		}
	}
	if len(out) == 0 {
		return nil, ErrNotReviewed
	}
	return out, nil
}

// SetChanges compares shown (tool → the digest, or a prefix of it as
// ParseDigest takes, that the review showed) with the pins now: every
// approvable pin must be in shown with its digest, and every tool in
// shown must be approvable with it or approved exactly as shown. It
// returns one line per difference (none: the set is as reviewed), or
// ErrDigestSyntax for a digest that is no digest.
func SetChanges(pins map[string]*Pin, shown map[string]string) ([]string, error) {
	want := make(map[string]string, len(shown))
	for tool, d := range shown {
		h, err := ParseDigest(d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tool, err)
		}
		want[tool] = h
	}
	var out []string
	for _, tool := range slices.Sorted(maps.Keys(pins)) {
		p := pins[tool]
		if !Approvable(p) {
			continue
		}
		switch d, ok := want[tool]; {
		case !ok:
			out = append(out, fmt.Sprintf("%s: listed as sha256:%s, which the review did not show (new since)", tool, p.SeenDigest))
		case !strings.HasPrefix(p.SeenDigest, d):
			out = append(out, fmt.Sprintf("%s: the review showed sha256:%s, the upstream lists sha256:%s now", tool, d, p.SeenDigest))
		}
	}
	for _, tool := range slices.Sorted(maps.Keys(want)) {
		p, d := pins[tool], want[tool]
		switch {
		case Approvable(p):
		case p == nil || p.Seen == nil:
			out = append(out, fmt.Sprintf("%s: the review showed sha256:%s, the upstream no longer lists it", tool, d))
		case !strings.HasPrefix(p.ApprovedDigest, d):
			out = append(out, fmt.Sprintf("%s: the review showed sha256:%s, sha256:%s is approved since", tool, d, p.ApprovedDigest))
		}
	}
	return out, nil
}
