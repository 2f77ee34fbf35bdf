package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// Filter selects audit records for the audit browser. Its fields come
// from the query string, so ParseFilter checks each.
type Filter struct {
	Context   string // a context id or its prefix
	Principal string // a substring of the principal
	Tool      string // a tool or capability name, exact
	Decision  string // allow, deny, require_approval, exact
	Violation string // a violation code, exact
	From, To  time.Time
	// Before pages back: only records with a smaller seq (0: the newest).
	Before int64
}

// Errors of ParseFilter, wrapped in a *FilterError naming the field.
var (
	errTooLong  = errors.New("longer than 200 bytes")
	errBadChars = errors.New("not printable UTF-8")
	errBadTime  = errors.New("not a time (2006-01-02, 2006-01-02T15:04 or RFC 3339)")
	errBadSeq   = errors.New("not a positive record number")
	errBadName  = errors.New("not a lower-case name")
)

const maxFilterLen = 200

// timeLayouts are what a date or datetime-local input sends, and RFC 3339.
var timeLayouts = []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"}

// ParseFilter reads the audit browser's query. Every value is bounded and
// must be printable UTF-8; a bad one is a *FilterError wrapping
// ErrBadFilter, never a partial filter (FuzzParseFilter).
func ParseFilter(q url.Values) (Filter, error) {
	var f Filter
	for _, fld := range []struct {
		name string
		dst  *string
	}{{"context", &f.Context}, {"principal", &f.Principal}, {"tool", &f.Tool}, {"decision", &f.Decision}, {"violation", &f.Violation}} {
		v := strings.TrimSpace(q.Get(fld.name))
		if err := checkText(v); err != nil {
			return Filter{}, badFilter(fld.name, err)
		}
		*fld.dst = v
	}
	if f.Decision != "" && !isName(f.Decision, false) {
		return Filter{}, badFilter("decision", errBadName)
	}
	if f.Violation != "" && !isName(f.Violation, true) {
		return Filter{}, badFilter("violation", errBadName)
	}
	var err error
	if f.From, err = parseTime(q.Get("from")); err != nil {
		return Filter{}, badFilter("from", err)
	}
	if f.To, err = parseTime(q.Get("to")); err != nil {
		return Filter{}, badFilter("to", err)
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return Filter{}, badFilter("before", errBadSeq)
		}
		f.Before = n
	}
	return f, nil
}

func badFilter(field string, err error) error {
	return &FilterError{Field: field, Err: errors.Join(ErrBadFilter, err)}
}

func checkText(v string) error {
	if len(v) > maxFilterLen {
		return errTooLong
	}
	if !utf8.ValidString(v) {
		return errBadChars
	}
	for _, r := range v {
		if !unicode.IsPrint(r) {
			return errBadChars
		}
	}
	return nil
}

// isName: [a-z_] (decisions), or [A-Z_] when upper (violation codes).
func isName(v string, upper bool) bool {
	for _, r := range v {
		ok := r == '_' || (!upper && r >= 'a' && r <= 'z') || (upper && r >= 'A' && r <= 'Z')
		if !ok {
			return false
		}
	}
	return len(v) <= 64
}

func parseTime(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, nil
	}
	if len(v) > 64 {
		return time.Time{}, errBadTime
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, v); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, errBadTime
}

// Match reports whether rec passes every set field.
func (f Filter) Match(rec *audit.Record) bool {
	switch {
	case f.Before > 0 && rec.Seq >= f.Before,
		f.Context != "" && !strings.HasPrefix(rec.ContextID, f.Context),
		f.Principal != "" && !strings.Contains(rec.Principal, f.Principal),
		f.Tool != "" && rec.Tool != f.Tool && rec.Capability != f.Tool,
		f.Decision != "" && rec.Decision != f.Decision,
		f.Violation != "" && rec.Violation != f.Violation,
		!f.From.IsZero() && rec.Time.Before(f.From),
		!f.To.IsZero() && rec.Time.After(f.To):
		return false
	}
	return true
}

// query is the filter as a query string, for the next page's link.
func (f Filter) query(before int64) string {
	q := url.Values{}
	for k, v := range map[string]string{"context": f.Context, "principal": f.Principal, "tool": f.Tool, "decision": f.Decision, "violation": f.Violation} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if !f.From.IsZero() {
		q.Set("from", f.From.Format(time.RFC3339))
	}
	if !f.To.IsZero() {
		q.Set("to", f.To.Format(time.RFC3339))
	}
	q.Set("before", strconv.FormatInt(before, 10))
	return q.Encode()
}

// auditPageSize is the records per audit page.
const auditPageSize = 50

type auditData struct {
	Filter       Filter
	FromText     string
	ToText       string
	Records      []*audit.Record
	Older        string // query of the next (older) page; "" at the end
	Verification operator.AuditVerification
	Full         bool
}

// auditPage is the audit browser: the newest records passing the filter,
// a page at a time, under the chain's and the witness's verification
// state — computed by operator.API.VerifyIncremental (or Verify with
// ?verify=full), the code `airlock audit verify` runs.
func (c *Console) auditPage(w http.ResponseWriter, r *http.Request, s *session) {
	p := newPage(s, "audit", "Audit trail", r)
	f, err := ParseFilter(r.URL.Query())
	if err != nil {
		status, msg := c.publicError(err)
		p.Error, p.Data = msg, auditData{}
		c.render(w, status, "audit", p)
		return
	}
	data := auditData{Filter: f, Full: r.URL.Query().Get("verify") == "full"}
	if !f.From.IsZero() {
		data.FromText = f.From.Format(time.RFC3339)
	}
	if !f.To.IsZero() {
		data.ToText = f.To.Format(time.RFC3339)
	}
	ctx := r.Context()
	if data.Full {
		data.Verification, err = c.op.Verify(ctx)
	} else {
		data.Verification, err = c.op.VerifyIncremental(ctx)
	}
	if err == nil {
		// The last auditPageSize+1 matches: one more than shown says
		// whether there is an older page.
		var ring []*audit.Record
		err = c.op.Scan(ctx, 0, func(rec *audit.Record) error {
			if f.Match(rec) {
				cp := *rec
				ring = append(ring, &cp)
				if len(ring) > auditPageSize+1 {
					ring = ring[1:]
				}
			}
			return nil
		})
		if len(ring) > auditPageSize {
			ring = ring[1:]
			data.Older = f.query(ring[0].Seq)
		}
		for i := len(ring) - 1; i >= 0; i-- {
			data.Records = append(data.Records, ring[i])
		}
	}
	if err != nil {
		status, msg := c.publicError(err)
		p.Error, p.Data = msg, data
		c.render(w, status, "audit", p)
		return
	}
	p.Data = data
	c.render(w, http.StatusOK, "audit", p)
}
