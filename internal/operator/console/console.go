package console

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/internal/policy/pinning"
	"github.com/airlock-dev/airlock/phasegate"
)

// Path is where the console is served.
const Path = "/console"

// TransportName names the console in audit records.
const TransportName = "console"

// contentSecurityPolicy allows the console's own stylesheet and script
// and nothing else: no inline script or style (an injected <script> or
// onerror= would not run even if escaping failed), no framing
// (clickjacking of the approve button), forms only to the console, no
// <base> to redirect relative URLs.
const contentSecurityPolicy = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Admin decides who may log in to the console. It is consulted on every
// request, so a revoked admin token (a configuration reload) ends the
// sessions it opened. Safe for concurrent use.
type Admin interface {
	// Login returns the admin principal a token belongs to and an opaque
	// id of the credential, or ErrUnknownToken / ErrNotAdmin (with the
	// principal of the other role's token, for the audit record).
	Login(token string) (principal, credential string, err error)
	// Valid reports whether the credential a session was opened with is
	// still an admin credential. (Not the principal: a rotated token
	// keeps its principal name, and must end the old token's sessions.)
	Valid(credential string) bool
}

// Refusal is a refused console request for the audit trail.
type Refusal struct {
	Principal string // "anonymous" before login
	Code      violation.Code
	Kind      string // a fixed cause, for counting refusals apart
	Reason    string
}

// Options configure a Console; nil means defaults.
type Options struct {
	Logger *slog.Logger
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// SessionTTL is how long a login lasts, read at each login (one hour
	// when nil).
	SessionTTL func() time.Duration
	// Refuse audits a refused request (a failed login, a forged form).
	Refuse func(r *http.Request, ref Refusal)
	// Config is the configuration in force, read at each use: the
	// Upstreams page lists and refreshes its upstreams. Without it the
	// page shows the stored pins only.
	Config func() *config.Config
	// Authenticated is told of each request with a live session (the
	// HTTP edge stops counting the connection as unauthenticated).
	Authenticated func(r *http.Request)
}

// Console serves the operator's pages. Create it with New.
type Console struct {
	op       *operator.API
	admin    Admin
	opts     Options
	log      *slog.Logger
	sessions *sessions
	pages    map[string]*template.Template
	mux      *http.ServeMux
	cop      *http.CrossOriginProtection
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// New builds the console over op (operator.Attach of the running
// runner's Lend, transport "console": the CLI's own operator code) and
// admin.
func New(op *operator.API, admin Admin, opts *Options) (*Console, error) {
	if op == nil || admin == nil {
		return nil, errors.New("console: an operator and an admin check are required")
	}
	c := &Console{op: op, admin: admin, sessions: newSessions()}
	if opts != nil {
		c.opts = *opts
	}
	if c.opts.Now == nil {
		c.opts.Now = time.Now
	}
	if c.opts.SessionTTL == nil {
		c.opts.SessionTTL = func() time.Duration { return time.Hour }
	}
	if c.opts.Refuse == nil {
		c.opts.Refuse = func(*http.Request, Refusal) {}
	}
	if c.opts.Authenticated == nil {
		c.opts.Authenticated = func(*http.Request) {}
	}
	c.log = c.opts.Logger
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if c.pages, err = parsePages(); err != nil {
		return nil, err
	}
	// Go's cross-origin protection refuses a non-safe request a browser
	// marks cross-site (Sec-Fetch-Site) or whose Origin is not the Host:
	// a second line behind the CSRF token.
	c.cop = http.NewCrossOriginProtection()
	c.cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.refuse(w, r, "anonymous", violation.CSRFRefused, "cross-origin", r.Method+" "+r.URL.Path+" refused: a cross-origin browser request")
	}))
	c.routes()
	return c, nil
}

func parsePages() (map[string]*template.Template, error) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	pages := map[string]*template.Template{}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", n)
		if err != nil {
			return nil, err
		}
		pages[base] = t
	}
	return pages, nil
}

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"join": strings.Join,
}

func (c *Console) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET "+Path+"/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Path+"/approvals", http.StatusSeeOther)
	})
	m.Handle("GET "+Path+"/assets/", http.StripPrefix(Path, http.FileServerFS(assetFS)))
	m.HandleFunc("GET "+Path+"/login", c.loginPage)
	m.HandleFunc("POST "+Path+"/login", c.login)
	m.Handle("POST "+Path+"/logout", c.authed(c.logout))
	m.Handle("GET "+Path+"/approvals", c.authed(c.approvalsPage))
	m.Handle("GET "+Path+"/approvals.json", c.authed(c.approvalsJSON))
	m.Handle("POST "+Path+"/approvals/decide", c.authed(c.decide))
	m.Handle("GET "+Path+"/audit", c.authed(c.auditPage))
	m.Handle("GET "+Path+"/contexts", c.authed(c.contextsPage))
	m.Handle("GET "+Path+"/contexts/{id}", c.authed(c.contextPage))
	m.Handle("POST "+Path+"/contexts/phase", c.authed(c.setPhase))
	m.Handle("GET "+Path+"/report", c.authed(c.reportPage))
	m.Handle("GET "+Path+"/runs", c.authed(c.runsPage))
	m.Handle("GET "+Path+"/upstreams", c.authed(c.upstreamsPage))
	m.Handle("POST "+Path+"/upstreams/refresh", c.authed(c.refreshUpstreams))
	m.Handle("POST "+Path+"/upstreams/approve", c.authed(c.approveUpstream))
	m.Handle("POST "+Path+"/upstreams/approve-all", c.authed(c.approveUpstreamSet))
	m.Handle("GET "+Path+"/kill", c.authed(c.killPage))
	m.Handle("POST "+Path+"/kill", c.authed(c.setKill))
	c.mux = m
}

// ServeHTTP serves the console. The caller (the server's edge) has
// already checked the Origin allow-list and bounded the body.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: nothing (an id in a URL) leaks to
	// another site, but the browser still sends the real Origin on the
	// console's own form POSTs — under no-referrer Chromium sends
	// "Origin: null", which the edge's allow-list refuses.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if r.Method == http.MethodPost {
		// Defence in depth: the edge bounds the body already.
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	}
	c.cop.Handler(c.mux).ServeHTTP(w, r)
}

// maxFormBytes bounds a console form: a reason and a few ids.
const maxFormBytes = 64 << 10

// maxReason bounds an operator's reason (as the declaration fields are).
const maxReason = 2000

type sessionKey struct{}

// authed runs h for a request with a live session of a still-valid admin;
// a POST must also carry the session's CSRF token. Without a session a
// page redirects to the login form and anything else gets 401.
func (c *Console) authed(h func(http.ResponseWriter, *http.Request, *session)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := cookieValue(r, cookieSession)
		s, ok := c.sessions.get(id, c.opts.Now())
		if ok && !c.admin.Valid(s.credential) {
			// The admin's token was revoked or the console role changed.
			c.sessions.remove(id)
			ok = false
		}
		if !ok {
			if r.Method == http.MethodGet && !strings.HasSuffix(r.URL.Path, ".json") {
				to := Path + "/login"
				if id != "" {
					to += "?expired=1"
				}
				http.Redirect(w, r, to, http.StatusSeeOther)
				return
			}
			c.refuse(w, r, "anonymous", violation.Unauthenticated, "no console session", r.Method+" "+r.URL.Path+" refused: no live console session")
			return
		}
		c.opts.Authenticated(r)
		if r.Method == http.MethodPost {
			// ParseForm reads only the body of a POST form; a token in the
			// query string does not count (it would leak into logs).
			if err := r.ParseForm(); err != nil {
				http.Error(w, "bad form", http.StatusBadRequest)
				return
			}
			if !tokensEqual(r.PostForm.Get("csrf"), s.csrf) {
				c.refuse(w, r, s.principal, violation.CSRFRefused, "missing or wrong csrf token", r.Method+" "+r.URL.Path+" refused: the form does not carry this session's CSRF token")
				return
			}
		}
		h(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, s)), s)
	})
}

// refuse answers 401/403 and audits the refusal.
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, principal string, code violation.Code, kind, reason string) {
	c.opts.Refuse(r, Refusal{Principal: principal, Code: code, Kind: kind, Reason: reason})
	status := http.StatusForbidden
	if code == violation.Unauthenticated {
		status = http.StatusUnauthorized
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(string(code) + ": refused\n"))
}

// reason is the form's required reason, trimmed and bounded.
func reason(r *http.Request) (string, error) {
	why := strings.TrimSpace(r.PostForm.Get("reason"))
	if why == "" {
		return "", ErrReasonRequired
	}
	if len(why) > maxReason {
		// Cut on a rune boundary: the record stays valid UTF-8.
		why = strings.ToValidUTF8(why[:maxReason], "")
	}
	return why, nil
}

// page is what every template gets.
type page struct {
	Title     string
	Principal string
	CSRF      string
	Nav       string
	Message   string
	Error     string
	Live      string // data-live: which page polls
	Pending   string // data-pending: the pending ids as rendered
	Data      any
}

func (c *Console) render(w http.ResponseWriter, status int, name string, p page) {
	t := c.pages[name]
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	if err := t.Execute(&b, p); err != nil {
		c.log.Error("console: rendering", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write([]byte(b.String()))
}

// newPage fills the common fields for a session.
// renderData renders page name with data, or, when err is set, with the
// public form of err (its status and fixed message) and no data.
func (c *Console) renderData(w http.ResponseWriter, name string, p page, data any, err error) {
	if err != nil {
		status, msg := c.publicError(err)
		p.Error = msg
		c.render(w, status, name, p)
		return
	}
	p.Data = data
	c.render(w, http.StatusOK, name, p)
}

func newPage(s *session, nav, title string, r *http.Request) page {
	return page{Title: title, Principal: s.principal, CSRF: s.csrf, Nav: nav, Message: messages[r.URL.Query().Get("done")]}
}

// messages are the fixed notices a redirect after a POST may ask for:
// a key, never text from the request, is reflected.
var messages = map[string]string{
	"approved": "Approved: the agent can now collect it.",
	"denied":   "Denied: the agent is told the reason.",
	"engaged":  "Kill switch ENGAGED: every tool call is refused.",
	"released": "Kill switch released.",
	"phase":    "Phase changed: in force from the context's next call.",
	"upstream": "Approved: calls may use that definition now; declare_need's catalog lists it from the next tools/list.",
	"set":      "Approved every reviewed definition the review does not flag: calls may use them now; declare_need's catalog lists them from the next tools/list.",
}

// publicErrors are the known refusals an admin is shown as they are, in
// this order: the first entry one of whose errors the operator's error
// wraps answers.
var publicErrors = []struct {
	errs   []error
	status int
	text   string
}{
	{[]error{ErrReasonRequired}, http.StatusBadRequest, "A reason is required: it is recorded in the audit trail."},
	{[]error{declarations.ErrNotFound}, http.StatusNotFound, "No such declaration."},
	{[]error{declarations.ErrState, declarations.ErrExpired}, http.StatusConflict, "That declaration is no longer waiting for a decision."},
	{[]error{operator.ErrNoSuchContext}, http.StatusNotFound, "No such context."},
	{[]error{operator.ErrAmbiguousID}, http.StatusConflict, "That id names a context and a session onto another context: nothing changed."},
	{[]error{contexts.ErrWidens}, http.StatusConflict, "A child context cannot be put in execution while its parent is in planning."},
	{[]error{phasegate.ErrUnknownPhase}, http.StatusBadRequest, "The phase is planning or execution."},
	{[]error{pinning.ErrNothingToApprove}, http.StatusConflict, "Nothing in this set waits for an approval the review does not flag: nothing was approved."},
	{[]error{pinning.ErrStale}, http.StatusConflict, "That tool's definition changed since this page showed it: nothing was approved. Review the definition listed now."},
	{[]error{pinning.ErrOverrideRequired}, http.StatusConflict, "The review flags this definition: nothing was approved. Read its signals; to approve it anyway, tick the override (your reason is audited), or give the description the agent should see instead."},
	{[]error{pinning.ErrReasonRequired}, http.StatusBadRequest, "An override or an edited description needs a reason: it is recorded in the audit trail."},
	{[]error{pinning.ErrEditedDescription}, http.StatusBadRequest, "The edited description is empty, longer than 2,000 bytes, or holds characters a reader cannot see: nothing was approved."},
	{[]error{pinning.ErrDigestSyntax}, http.StatusBadRequest, "That is not a digest the review showed: nothing was approved."},
	{[]error{operator.ErrUnknownTool}, http.StatusNotFound, "No such upstream tool: refresh to list the upstreams again."},
}

// publicError is what the admin is shown for an operator error: the
// cause when it is one of the known refusals, else a reference to the
// log (no store or host detail in the page).
func (c *Console) publicError(err error) (int, string) {
	// A changed set names its changes. It is asked first: it wraps
	// pinning.ErrStale, whose entry would answer it without them, and
	// no entry before that one.
	if errors.As(err, new(*pinning.SetChangedError)) {
		return http.StatusConflict, "The upstream's tools changed since this page showed them (" + strings.Join(setChanges(err), "; ") + "): nothing was approved. Review what is listed now."
	}
	for _, p := range publicErrors {
		for _, e := range p.errs {
			if errors.Is(err, e) {
				return p.status, p.text
			}
		}
	}
	if errors.Is(err, ErrBadFilter) {
		return http.StatusBadRequest, err.Error()
	}
	ref := uuid.NewString()[:8]
	c.log.Error("console: operator action failed", "ref", ref, "err", err)
	return http.StatusInternalServerError, "Internal error (ref " + ref + "; see the server log)."
}
