package console

import (
	"errors"
	"net/http"

	"github.com/airlock-dev/airlock/internal/policy/pinning"
)

// approveUpstreamSet is the "approve all reviewed" action (issue 23 item
// 4): the form carries every definition of one upstream the page showed
// as waiting (tool and digest, flagged ones too), and
// operator.API.ApproveUpstreamSet — the method `airlock upstreams
// approve --all` calls — approves, in one transaction, those the review
// does not flag, each audited with its whole digest, the admin and the
// reason; if the upstream's waiting definitions are not exactly those
// shown (one changed, one new or gone since the render), nothing is
// approved and the page says what changed. The reason is required and
// the CSRF token checked, as for the one-tool form.
func (c *Console) approveUpstreamSet(w http.ResponseWriter, r *http.Request, s *session) {
	f := r.PostForm
	upstream, tools, digests := f.Get("upstream"), f["tool"], f["digest"]
	why, err := reason(r)
	if err == nil {
		if upstream == "" || len(tools) == 0 || len(tools) != len(digests) {
			http.Error(w, "upstream and the shown tools with their digests are required", http.StatusBadRequest)
			return
		}
		shown := make(map[string]string, len(tools))
		for i, t := range tools {
			if _, dup := shown[t]; dup || t == "" {
				http.Error(w, "each shown tool once", http.StatusBadRequest)
				return
			}
			shown[t] = digests[i]
		}
		_, err = c.op.ApproveUpstreamSet(r.Context(), upstream, shown, s.principal, why)
	}
	if err != nil {
		c.refusedApproval(w, r, s, err)
		return
	}
	http.Redirect(w, r, Path+"/upstreams?done=set", http.StatusSeeOther)
}

// setChanges are the lines of a refused set's changes, made visible:
// they quote digests only, but a tool's name is the upstream's text.
func setChanges(err error) []string {
	var sc *pinning.SetChangedError
	if !errors.As(err, &sc) {
		return nil
	}
	out := make([]string, len(sc.Changes))
	for i, c := range sc.Changes {
		out[i] = visible(c)
	}
	return out
}

// reviewedSet is what a group's "approve all reviewed" form carries: every
// waiting definition shown, and how many of them the review does not
// flag (the form is offered when there are two or more).
func reviewedSet(tools []upstreamTool) (shown []upstreamTool, unflagged int) {
	for _, t := range tools {
		if t.Approvable {
			shown = append(shown, t)
			if !t.Flagged {
				unflagged++
			}
		}
	}
	return shown, unflagged
}

// refusedApproval answers a refused approval (one tool's or a set's): the
// Upstreams page as stored now, with what was wrong.
func (c *Console) refusedApproval(w http.ResponseWriter, r *http.Request, s *session, err error) {
	status, msg := c.publicError(err)
	p := newPage(s, "upstreams", "Upstream tools", r)
	if data, derr := c.upstreams(r); derr == nil {
		p.Data = data
	}
	p.Error = msg
	c.render(w, status, "upstreams", p)
}
