package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/policy/redact"
)

// approvalRow is a declaration as the approvals page shows it. Every
// string in it may come from the agent: the template escapes it.
type approvalRow struct {
	*runner.Declaration
	Where string
	// Upstream, Tool and Arguments show a comm.mcp need (issue 24 item 1);
	// Args is where each argument came from (issue 22 item 5).
	Upstream, Tool, Arguments string
	Args                      []runner.NeedArgument
}

type approvalsData struct {
	Pending []approvalRow
	Recent  []approvalRow
}

// maxRecent is how many decided declarations the page lists.
const maxRecent = 20

func row(d *runner.Declaration) approvalRow {
	where := d.Need.Parameters.URL
	if where == "" {
		where = strings.TrimSpace(d.Need.Parameters.Source + " " + d.Need.Parameters.Query)
	}
	// As `airlock approvals list`: a credential in a stored URL is masked.
	return approvalRow{Declaration: d, Where: redact.Query(where, redact.Masked)}
}

// approvalsPage lists what waits for a decision (what / why / where, the
// policy rule) with approve and deny forms, and the latest decisions.
func (c *Console) approvalsPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := newPage(s, "approvals", "Pending approvals", r)
	data, ids, err := c.approvals(r)
	if err != nil {
		status, msg := c.publicError(err)
		p.Error = msg
		c.render(w, status, "approvals", p)
		return
	}
	p.Data, p.Live, p.Pending = data, "approvals", strings.Join(ids, ",")
	c.render(w, http.StatusOK, "approvals", p)
}

func (c *Console) approvals(r *http.Request) (approvalsData, []string, error) {
	return c.approvalsOf(r, true)
}

// approvalsOf lists the approvals; detail adds each pending need's
// provenance (a store read per declaration: the page, not the poll).
func (c *Console) approvalsOf(r *http.Request, detail bool) (approvalsData, []string, error) {
	all, err := c.op.Approvals(r.Context(), true)
	if err != nil {
		return approvalsData{}, nil, err
	}
	var data approvalsData
	var ids []string
	for _, d := range all {
		if d.State == declarations.StateDeclared {
			if detail {
				data.Pending = append(data.Pending, c.pendingRow(r, d))
			} else {
				data.Pending = append(data.Pending, row(d))
			}
			ids = append(ids, d.ID)
		}
	}
	for _, d := range slices.Backward(all) {
		if d.State != declarations.StateDeclared && len(data.Recent) < maxRecent {
			data.Recent = append(data.Recent, row(d))
		}
	}
	return data, ids, nil
}

// approvalsJSON is what the page's script polls for live updates: the
// pending ids, in the page's order.
func (c *Console) approvalsJSON(w http.ResponseWriter, r *http.Request, _ *session) {
	_, ids, err := c.approvalsOf(r, false)
	if err != nil {
		status, msg := c.publicError(err)
		http.Error(w, msg, status)
		return
	}
	if ids == nil {
		ids = []string{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"pending": ids})
}

// decide approves or denies through runner.Operator.Approve / Deny, the
// methods `airlock approvals approve|deny` call; they audit the decision.
func (c *Console) decide(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PostForm.Get("id")
	why, err := reason(r)
	if err == nil {
		switch decision := r.PostForm.Get("decision"); {
		case decision == "approve" && r.PostForm.Get("endorse") == "on":
			_, _, err = c.op.ApproveAndEndorse(r.Context(), id, s.principal, why)
			if errors.Is(err, runner.ErrNothingToEndorse) {
				err = nil // approved; every value was trusted already
			}
		case decision == "approve":
			_, err = c.op.Approve(r.Context(), id, s.principal, why)
		case decision == "deny":
			_, err = c.op.Deny(r.Context(), id, s.principal, why)
		default:
			http.Error(w, "decision is approve or deny", http.StatusBadRequest)
			return
		}
	}
	if err != nil {
		status, msg := c.publicError(err)
		p := newPage(s, "approvals", "Pending approvals", r)
		if data, ids, lerr := c.approvals(r); lerr == nil {
			p.Data, p.Live, p.Pending = data, "approvals", strings.Join(ids, ",")
		}
		p.Error = msg
		c.render(w, status, "approvals", p)
		return
	}
	done := "approved"
	if r.PostForm.Get("decision") == "deny" {
		done = "denied"
	}
	http.Redirect(w, r, Path+"/approvals?done="+done, http.StatusSeeOther)
}
