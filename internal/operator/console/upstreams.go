package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/pinning"
	"github.com/airlock-dev/airlock/internal/policy/poisoning"
)

// maxReviewSchema bounds a schema shown in the review (as the CLI's).
const maxReviewSchema = 4000

// upstreamGroup is one upstream on the Upstreams page.
type upstreamGroup struct {
	ID          string
	Description string // the operator's own, from the config
	Where       string // the URL, or the command's program
	Configured  bool   // false: pins of an upstream no longer configured
	Tools       []upstreamTool
	// Waiting are the definitions the "approve all reviewed" form
	// carries (upstreams_set.go); Unflagged of them would be approved.
	Waiting   []upstreamTool
	Unflagged int
	// Health is the upstream's warm sessions (upstream_health.go); nil:
	// none reported.
	Health *upstreamHealth
}

// upstreamTool is one pin as the review shows it: every text an upstream
// wrote is passed through visible and rendered by html/template.
type upstreamTool struct {
	Upstream       string
	Name           string // as listed: the approve form's value
	Tool           string // Name, made visible
	State          string
	SeenDigest     string
	ApprovedDigest string
	ApprovedBy     string
	Approvable     bool // pending or changed, and listed now
	Listed         bool
	Description    string
	Input, Output  string
	Flags          []reviewFlag
	Diff           []string // pinning.Diff, the CLI's "CHANGED" lines
	// The review (issue 25): its score, whether approving the listed
	// definition needs an override, and the operator's decision on the
	// approved one.
	Score    float64
	Flagged  bool
	Decision *reviewDecision
}

// reviewFlag is one finding as the page shows it: the signal (its
// explanation as the title), weight, field, what was seen and an
// excerpt, every upstream-written text made visible.
type reviewFlag struct {
	Signal, Why, Field, Reason, Excerpt string
	Weight                              float64
}

// reviewDecision is an override or an edited description, as shown.
type reviewDecision struct {
	Override   bool
	Score      float64
	By, Reason string
	Edited     string
	HasEdited  bool
}

type upstreamsData struct {
	Groups []upstreamGroup
	Failed []string // "id: cause" of the upstreams the last refresh could not list
}

// upstreamsPage shows the stored pins of every upstream, as `airlock
// upstreams review --offline` prints them; the refresh button lists the
// upstreams again first.
func (c *Console) upstreamsPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := newPage(s, "upstreams", "Upstream tools", r)
	data, err := c.upstreams(r)
	c.renderData(w, "upstreams", p, data, err)
}

func (c *Console) upstreams(r *http.Request) (upstreamsData, error) {
	pins, err := c.op.UpstreamPins(r.Context(), "")
	if err != nil {
		return upstreamsData{}, err
	}
	byID := map[string]*upstreamGroup{}
	var order []string
	if c.opts.Config != nil {
		for _, up := range c.opts.Config().Upstreams {
			g := &upstreamGroup{ID: up.ID, Description: visible(up.Description), Where: up.URL, Configured: true}
			if len(up.Command) > 0 {
				g.Where = "stdio: " + up.Command[0]
			}
			byID[up.ID], order = g, append(order, up.ID)
		}
	}
	for _, pin := range pins {
		g := byID[pin.Upstream]
		if g == nil {
			g = &upstreamGroup{ID: pin.Upstream}
			byID[pin.Upstream], order = g, append(order, pin.Upstream)
		}
		g.Tools = append(g.Tools, reviewRow(pin))
	}
	c.addHealth(r.Context(), byID)
	var d upstreamsData
	for _, id := range order {
		g := byID[id]
		g.Waiting, g.Unflagged = reviewedSet(g.Tools)
		d.Groups = append(d.Groups, *g)
	}
	return d, nil
}

// reviewRow is what printReview in the CLI prints of a pin, for a page.
func reviewRow(p *pinning.Pin) upstreamTool {
	t := upstreamTool{
		Upstream: p.Upstream, Name: p.Tool, Tool: visible(p.Tool), State: string(p.State), SeenDigest: p.SeenDigest, ApprovedDigest: p.ApprovedDigest,
		ApprovedBy: p.ApprovedBy, Listed: p.Seen != nil,
	}
	for _, f := range p.Flags {
		// A flag's field names the schema keys it was found under, and
		// its excerpt quotes the definition: the upstream wrote both.
		t.Flags = append(t.Flags, reviewFlag{Signal: f.Signal, Why: poisoning.Signal(f.Signal).Explain(), Field: visible(f.Field),
			Reason: visible(f.Reason), Excerpt: visible(f.Excerpt), Weight: f.Weight})
	}
	t.Score, t.Flagged = p.Score, p.Score >= poisoning.Threshold
	if d := p.Decision; d != nil {
		t.Decision = &reviewDecision{Override: d.Override, Score: d.Score, By: d.By, Reason: d.Reason, HasEdited: d.Edited != nil}
		if d.Edited != nil {
			t.Decision.Edited = visible(*d.Edited)
		}
	}
	t.Approvable = t.Listed && p.State != pinning.Approved && p.SeenDigest != ""
	if p.Seen != nil {
		t.Description = visible(p.Seen.Description)
		t.Input = schemaText(p.Seen.InputSchema)
		t.Output = schemaText(p.Seen.OutputSchema)
	}
	for _, line := range pinning.Diff(p) {
		t.Diff = append(t.Diff, visible(line))
	}
	return t
}

// approvalOf reads the approve form's choices beyond the digest: the
// override box, and the description for the catalog (empty: the
// upstream's).
func approvalOf(f url.Values) pinning.Approval {
	a := pinning.Approval{Override: f.Get("override") == "on"}
	if d := f.Get("description"); strings.TrimSpace(d) != "" {
		a.Edited = &d
	}
	return a
}

// schemaText is a schema indented for reading, with hidden characters
// made visible, cut at maxReviewSchema bytes.
func schemaText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		b.Reset()
		b.Write(raw)
	}
	s := b.String()
	if len(s) > maxReviewSchema {
		s = strings.ToValidUTF8(s[:maxReviewSchema], "") + " …(cut)"
	}
	return visible(s)
}

// visible renders every character a reader could not see, or that
// changes how the text around it reads, as a "⟦U+200B⟧" marker: format
// characters (zero-width, bidi controls, tag characters), controls other
// than newline and tab, spaces other than U+0020, variation selectors,
// and bytes that are not UTF-8. It blocks tool poisoning hidden from the
// reviewer: what the operator approves on the page is all there is.
// (JSON escapes such as \u200b in a schema are already visible text.)
func visible(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, "⟦0x%02X⟧", s[i])
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case hidden(r):
			fmt.Fprintf(&b, "⟦U+%04X⟧", r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// hidden: not printable in Go's sense (strconv.IsPrint: letters, marks,
// numbers, punctuation, symbols and the ASCII space), or a variation
// selector (which can carry data invisibly after any character), or a
// combining grapheme joiner.
func hidden(r rune) bool {
	switch {
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF, r == 0x034F, r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0, r == 0x2800:
		// variation selectors, CGJ, Hangul fillers and the blank braille
		// pattern: printable by category, blank on screen.
		return true
	}
	return !strconv.IsPrint(r)
}

// refreshUpstreams lists the upstreams again through
// operator.API.RefreshUpstreams, as `airlock upstreams review` does:
// new tools become pending, changed ones blocked, each change audited.
func (c *Console) refreshUpstreams(w http.ResponseWriter, r *http.Request, s *session) {
	p := newPage(s, "upstreams", "Upstream tools", r)
	if c.opts.Config == nil {
		p.Error = "This console has no configuration to list upstreams from."
		c.render(w, http.StatusServiceUnavailable, "upstreams", p)
		return
	}
	errs := c.op.RefreshUpstreams(r.Context(), c.opts.Config(), "", s.principal)
	data, err := c.upstreams(r)
	if err != nil {
		status, msg := c.publicError(err)
		p.Error = msg
		c.render(w, status, "upstreams", p)
		return
	}
	for _, id := range slices.Sorted(maps.Keys(errs)) {
		data.Failed = append(data.Failed, id+": "+c.upstreamCause(id, errs[id]))
	}
	p.Data = data
	if len(errs) == 0 {
		p.Message = "Refreshed: every configured upstream was listed again."
	}
	c.render(w, http.StatusOK, "upstreams", p)
}

// upstreamCause is what the page says of a failed listing: the typed
// code, the whole error in the log under a reference (it may name host
// paths or addresses).
func (c *Console) upstreamCause(id string, err error) string {
	ref := uuid.NewString()[:8]
	c.log.Warn("console: upstream could not be listed", "upstream", id, "ref", ref, "err", err)
	if code, ok := violation.CodeOf(err); ok {
		return string(code) + " (ref " + ref + "; see the server log)"
	}
	return "could not be listed (ref " + ref + "; see the server log)"
}

// approveUpstream approves exactly the definition the page showed: the
// form carries its digest, and operator.API.ApproveUpstreamToolBecause
// (the method `airlock upstreams approve` calls) refuses it with
// pinning.ErrStale if the upstream lists another definition now — a rug
// pull between render and click is never approved. Audited either way,
// with the admin and the reason.
func (c *Console) approveUpstream(w http.ResponseWriter, r *http.Request, s *session) {
	f := r.PostForm
	upstream, tool, digest := f.Get("upstream"), f.Get("tool"), strings.TrimPrefix(f.Get("digest"), "sha256:")
	why, err := reason(r)
	if err == nil {
		if upstream == "" || tool == "" || digest == "" {
			http.Error(w, "upstream, tool and digest are required", http.StatusBadRequest)
			return
		}
		_, err = c.op.ApproveUpstreamToolAs(r.Context(), upstream, tool, digest, s.principal, why, approvalOf(f))
	}
	if err != nil {
		c.refusedApproval(w, r, s, err)
		return
	}
	http.Redirect(w, r, Path+"/upstreams?done=upstream", http.StatusSeeOther)
}
