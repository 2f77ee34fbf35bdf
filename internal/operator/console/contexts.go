package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/operator/report"
	"github.com/airlock-dev/airlock/internal/policy/limits"
)

type contextRow struct {
	*operator.Context
	Usage    limits.Usage
	Sessions int
}

// contextsPage lists every runtime context: phase, bound pools, policy,
// limit usage and open sessions (what `airlock context list|show` print).
func (c *Console) contextsPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := newPage(s, "contexts", "Contexts and sessions", r)
	rows, err := c.contextRows(r)
	c.renderData(w, "contexts", p, rows, err)
}

func (c *Console) contextRows(r *http.Request) ([]contextRow, error) {
	cs, err := c.op.Contexts(r.Context(), "")
	if err != nil {
		return nil, err
	}
	rows := make([]contextRow, 0, len(cs))
	for _, cx := range cs {
		u, err := c.op.ContextUsage(r.Context(), cx.ID)
		if err != nil {
			return nil, err
		}
		ss, err := c.op.Sessions(r.Context(), cx.ID)
		if err != nil {
			return nil, err
		}
		rows = append(rows, contextRow{Context: cx, Usage: u, Sessions: len(ss)})
	}
	return rows, nil
}

type contextData struct {
	Row     contextRow
	Open    []string // open session ids
	Seen    []string // every session id the audit trail has for it
	Reports []sessionReport
}

type sessionReport struct {
	Session  string
	Markdown string
}

// contextPage shows one context with its sessions, their Sources Used
// reports (package report, as `airlock report` prints them) and the
// phase form.
func (c *Console) contextPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := newPage(s, "contexts", "Context", r)
	data, err := c.contextData(r, r.PathValue("id"))
	c.renderData(w, "context", p, data, err)
}

func (c *Console) contextData(r *http.Request, id string) (contextData, error) {
	ctx := r.Context()
	cx, err := c.op.Context(ctx, id)
	if err != nil {
		return contextData{}, err
	}
	u, err := c.op.ContextUsage(ctx, cx.ID)
	if err != nil {
		return contextData{}, err
	}
	ss, err := c.op.Sessions(ctx, cx.ID)
	if err != nil {
		return contextData{}, err
	}
	d := contextData{Row: contextRow{Context: cx, Usage: u, Sessions: len(ss)}}
	for _, s := range ss {
		d.Open = append(d.Open, s.ID)
	}
	err = c.op.Scan(ctx, 0, func(rec *audit.Record) error {
		if rec.ContextID == cx.ID && rec.SessionID != "" && !slices.Contains(d.Seen, rec.SessionID) {
			d.Seen = append(d.Seen, rec.SessionID)
		}
		return nil
	})
	if err != nil {
		return contextData{}, err
	}
	// The newest sessions' reports (each is a scan of the trail).
	for i := len(d.Seen) - 1; i >= 0 && len(d.Reports) < maxReports; i-- {
		rep, err := report.Build(ctx, c.op, d.Seen[i])
		if err != nil {
			return contextData{}, err
		}
		var b bytes.Buffer
		rep.WriteMarkdown(&b)
		d.Reports = append(d.Reports, sessionReport{Session: rep.Session(), Markdown: b.String()})
	}
	return d, nil
}

// maxReports bounds the reports rendered on a context page.
const maxReports = 5

// reportPage is one session's Sources Used report.
func (c *Console) reportPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := newPage(s, "contexts", "Sources Used", r)
	rep, err := report.Build(r.Context(), c.op, r.URL.Query().Get("session"))
	if err != nil {
		status, msg := c.publicError(err)
		if status == http.StatusInternalServerError {
			status, msg = http.StatusNotFound, "No such session in the audit trail."
		}
		p.Error = msg
		c.render(w, status, "report", p)
		return
	}
	var b bytes.Buffer
	rep.WriteMarkdown(&b)
	p.Data = sessionReport{Session: rep.Session(), Markdown: b.String()}
	c.render(w, http.StatusOK, "report", p)
}

// setPhase moves a context through operator.API.SetPhase, as
// `airlock phase` does; the order is audited, refused or not.
func (c *Console) setPhase(w http.ResponseWriter, r *http.Request, s *session) {
	id := r.PostForm.Get("context")
	why, err := reason(r)
	if err == nil {
		_, err = c.op.SetPhase(r.Context(), id, r.PostForm.Get("phase"), s.principal, why)
	}
	if err != nil {
		status, msg := c.publicError(err)
		p := newPage(s, "contexts", "Context", r)
		if d, derr := c.contextData(r, id); derr == nil {
			p.Data = d
		}
		p.Error = msg
		c.render(w, status, "context", p)
		return
	}
	http.Redirect(w, r, Path+"/contexts/"+url.PathEscape(id)+"?done=phase", http.StatusSeeOther)
}

// runRow is one run_pipeline call with its evidence, as audited.
type runRow struct {
	Seq       int64
	Record    *audit.Record
	Run       report.PipelineRun
	Outputs   []runOutput
	Evidence  string // the whole evidence, indented JSON
	LimitsHit []string
}

type runOutput struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// maxRuns is how many runs the runs page shows, newest first.
const maxRuns = 100

// runsPage lists pipeline runs with their outputs (names, sizes, hashes)
// and evidence, read from the audit trail.
func (c *Console) runsPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := newPage(s, "runs", "Pipeline runs", r)
	var rows []runRow
	err := c.op.Scan(r.Context(), 0, func(rec *audit.Record) error {
		var extra struct {
			Evidence json.RawMessage `json:"evidence"`
		}
		if rec.Tool != "run_pipeline" || json.Unmarshal(rec.Extra, &extra) != nil || len(extra.Evidence) == 0 {
			return nil
		}
		row := runRow{Seq: rec.Seq, Record: rec}
		var ev struct {
			Outputs   []runOutput `json:"outputs"`
			LimitsHit []string    `json:"limits_hit"`
		}
		_ = json.Unmarshal(extra.Evidence, &row.Run)
		_ = json.Unmarshal(extra.Evidence, &ev)
		row.Outputs, row.LimitsHit = ev.Outputs, ev.LimitsHit
		var b bytes.Buffer
		if json.Indent(&b, extra.Evidence, "", "  ") == nil {
			row.Evidence = b.String()
		}
		rows = append(rows, row)
		if len(rows) > maxRuns {
			rows = rows[1:]
		}
		return nil
	})
	slices.Reverse(rows)
	c.renderData(w, "runs", p, rows, err)
}
