package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// The web console (issue 12 item 1) on a real loopback server, real
// store, real agent calls. The browser half is e2e/tests/console.test.mjs.

const (
	adminEnv   = "AIRLOCK_TEST_TOKEN_ADMIN"
	adminToken = "test-token-admin-0123456789abcdef"
	adminRole  = "admin"
)

// consoleWeb is testConfig with an admin role and settings (console_role
// and the like) in transports.http.
func consoleWeb(t *testing.T, httpSettings string) *web {
	t.Helper()
	t.Setenv(adminEnv, adminToken)
	cfg := withHTTP(t, fmt.Sprintf(testConfig, "local"), httpSettings)
	cfg = strings.Replace(cfg, "transports:\n", "  admin:\n    policy: base\n    tokens: [{env: "+adminEnv+"}]\ntransports:\n", 1)
	return webFixtureConfig(t, cfg)
}

// browser is a minimal cookie-keeping client: Go's cookie jar never sends
// a Secure cookie over http://, which loopback browsers do (Chromium
// treats http://127.0.0.1 as a potentially trustworthy origin).
type browser struct {
	base    string
	hc      *http.Client
	cookies map[string]*http.Cookie
}

func newBrowser(base string, hc *http.Client) *browser {
	if hc == nil {
		hc = &http.Client{}
	}
	c := *hc
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{base: base, hc: &c, cookies: map[string]*http.Cookie{}}
}

type consolePage struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(t *testing.T, method, path string, form url.Values, header map[string]string) consolePage {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	must(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	for _, c := range b.cookies {
		req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
	}
	res, err := b.hc.Do(req)
	must(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	must(t, err)
	for _, c := range res.Cookies() {
		if c.MaxAge < 0 {
			delete(b.cookies, c.Name)
		} else {
			b.cookies[c.Name] = c
		}
	}
	return consolePage{status: res.StatusCode, header: res.Header, body: string(raw)}
}

var (
	reLoginToken = regexp.MustCompile(`name="login_token" value="([^"]+)"`)
	reCSRF       = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
)

func field(t *testing.T, re *regexp.Regexp, body string) string {
	t.Helper()
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in:\n%s", re, body)
	}
	return m[1]
}

// login logs in with token and returns the login POST's answer.
func (b *browser) login(t *testing.T, token string) consolePage {
	t.Helper()
	lp := b.do(t, http.MethodGet, "/console/login", nil, nil)
	if lp.status != http.StatusOK {
		t.Fatalf("login page: %d %s", lp.status, lp.body)
	}
	return b.do(t, http.MethodPost, "/console/login", url.Values{"login_token": {field(t, reLoginToken, lp.body)}, "token": {token}}, nil)
}

// admin is a browser logged in as the admin, with its CSRF token.
func (b *browser) admin(t *testing.T) string {
	t.Helper()
	if p := b.login(t, adminToken); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/approvals" {
		t.Fatalf("admin login: %d %q %s", p.status, p.header.Get("Location"), p.body)
	}
	p := b.do(t, http.MethodGet, "/console/approvals", nil, nil)
	if p.status != http.StatusOK {
		t.Fatalf("approvals: %d %s", p.status, p.body)
	}
	return field(t, reCSRF, p.body)
}

// consoleRecords are the audit records of the console (its refusals and
// the operator actions taken through it).
func consoleRecords(t *testing.T, f *fixture, capability, code string) []audit.Record {
	t.Helper()
	var out []audit.Record
	for _, r := range f.auditRecords(t) {
		if r.Transport == "console" && (capability == "" || r.Capability == capability) && (code == "" || r.Violation == code) {
			out = append(out, r)
		}
	}
	return out
}

func TestConsoleDisabledWithoutAdmin(t *testing.T) {
	w := consoleWeb(t, "")
	b := newBrowser(w.ts.URL, nil)
	for _, path := range []string{"/console", "/console/login", "/console/approvals"} {
		if p := b.do(t, http.MethodGet, path, nil, nil); p.status != http.StatusNotFound {
			t.Errorf("%s without console_role: %d", path, p.status)
		}
	}
}

// TestConsoleLogin: only a token of console_role opens a session; an
// unknown token, another role's token and a login form without its
// token are refused, and audited.
func TestConsoleLogin(t *testing.T) {
	w := consoleWeb(t, "console_role: admin")
	for _, tc := range []struct {
		name, token, code string
		status            int
	}{
		{"wrong token", "not-a-token-at-all-0123456789abcdef", "UNAUTHENTICATED", http.StatusUnauthorized},
		{"another role's token", tokenOf("agent"), "INSUFFICIENT_SCOPE", http.StatusUnauthorized},
		{"empty token", "", "UNAUTHENTICATED", http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBrowser(w.ts.URL, nil)
			p := b.login(t, tc.token)
			if p.status != tc.status || b.cookies["airlock-console"] != nil {
				t.Fatalf("status %d, cookies %v", p.status, b.cookies)
			}
			if got := b.do(t, http.MethodGet, "/console/approvals", nil, nil); got.status != http.StatusSeeOther {
				t.Fatalf("after a refused login: %d", got.status)
			}
			if len(consoleRecords(t, w.fixture, "transport.edge", tc.code)) == 0 {
				t.Fatalf("no audited %s refusal", tc.code)
			}
		})
	}
	t.Run("no login token", func(t *testing.T) {
		b := newBrowser(w.ts.URL, nil)
		p := b.do(t, http.MethodPost, "/console/login", url.Values{"token": {adminToken}}, nil)
		if p.status != http.StatusForbidden || len(consoleRecords(t, w.fixture, "transport.edge", "CSRF_REFUSED")) == 0 {
			t.Fatalf("login without its form token: %d", p.status)
		}
	})
	t.Run("admin", func(t *testing.T) {
		b := newBrowser(w.ts.URL, nil)
		b.admin(t)
		recs := consoleRecords(t, w.fixture, "operator.console_login", "")
		if len(recs) != 1 || recs[0].Principal != "operator:admin/env:"+adminEnv {
			t.Fatalf("login records: %+v", recs)
		}
		// The agent's MCP token of another role still works on /mcp, and
		// the admin's session cookie is no MCP credential.
		res := b.do(t, http.MethodPost, "/mcp", nil, nil)
		if res.status != http.StatusUnauthorized {
			t.Fatalf("/mcp with only the console cookie: %d", res.status)
		}
	})
}

// TestConsoleCookieFlags: Secure, HttpOnly, SameSite=Strict; over TLS
// the __Host- prefix with Path=/.
func TestConsoleCookieFlags(t *testing.T) {
	w := consoleWeb(t, "console_role: admin")
	check := func(t *testing.T, b *browser, name, path string) {
		t.Helper()
		b.admin(t)
		c := b.cookies[name]
		if c == nil {
			t.Fatalf("no cookie %s: %v", name, b.cookies)
		}
		if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != path || c.Domain != "" || len(c.Value) < 43 {
			t.Fatalf("cookie %+v", c)
		}
	}
	t.Run("loopback http", func(t *testing.T) { check(t, newBrowser(w.ts.URL, nil), "airlock-console", "/console") })
	t.Run("tls", func(t *testing.T) {
		ts := httptest.NewTLSServer(w.srv.Handler())
		defer ts.Close()
		hc := ts.Client()
		hc.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
		check(t, newBrowser(ts.URL, hc), "__Host-airlock-console", "/")
	})
}

// TestConsoleHeaders: every console response forbids inline script,
// framing and caching.
func TestConsoleHeaders(t *testing.T) {
	w := consoleWeb(t, "console_role: admin")
	b := newBrowser(w.ts.URL, nil)
	b.admin(t)
	for _, path := range []string{"/console/login", "/console/approvals", "/console/audit", "/console/contexts", "/console/runs", "/console/kill", "/console/approvals.json", "/console/assets/console.js"} {
		p := b.do(t, http.MethodGet, path, nil, nil)
		if p.status != http.StatusOK {
			t.Fatalf("%s: %d %s", path, p.status, p.body)
		}
		for k, v := range map[string]string{
			"Content-Security-Policy": "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
			"X-Content-Type-Options":  "nosniff", "Referrer-Policy": "same-origin", "Cache-Control": "no-store", "X-Frame-Options": "DENY",
		} {
			if got := p.header.Get(k); got != v {
				t.Errorf("%s: %s = %q", path, k, got)
			}
		}
		if strings.Contains(p.body, "<script>") || strings.Contains(p.body, " style=") {
			t.Errorf("%s has inline script or style", path)
		}
	}
}

// TestConsoleCSRF: a state-changing POST with the admin's cookie but
// without the session's CSRF token (a forged form, a fetch from another
// page), with another session's token, or from another site, is refused
// 403 and audited, and changes nothing.
func TestConsoleCSRF(t *testing.T) {
	w := consoleWeb(t, "console_role: admin")
	b := newBrowser(w.ts.URL, nil)
	ownCSRF := b.admin(t)
	other := newBrowser(w.ts.URL, nil)
	otherCSRF := other.admin(t)
	sameSite := map[string]string{"Origin": w.ts.URL, "Sec-Fetch-Site": "same-origin"}
	for _, tc := range []struct {
		name   string
		form   url.Values
		header map[string]string
	}{
		{"no token", url.Values{"action": {"engage"}, "reason": {"forged"}}, sameSite},
		{"empty token", url.Values{"action": {"engage"}, "reason": {"forged"}, "csrf": {""}}, sameSite},
		{"another session's token", url.Values{"action": {"engage"}, "reason": {"forged"}, "csrf": {otherCSRF}}, sameSite},
		{"token in the query only", nil, sameSite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := "/console/kill"
			form := tc.form
			if form == nil {
				// The session's own token, but in the URL (where it would
				// leak into logs and Referer headers): not accepted.
				path += "?csrf=" + url.QueryEscape(ownCSRF)
				form = url.Values{"action": {"engage"}, "reason": {"forged"}}
			}
			p := b.do(t, http.MethodPost, path, form, tc.header)
			if p.status != http.StatusForbidden || !strings.Contains(p.body, "CSRF_REFUSED") {
				t.Fatalf("forged POST: %d %s", p.status, p.body)
			}
		})
	}
	recs := consoleRecords(t, w.fixture, "transport.edge", "CSRF_REFUSED")
	if len(recs) == 0 || recs[0].Principal != "admin/env:"+adminEnv {
		t.Fatalf("CSRF refusals audited: %+v", recs)
	}
	t.Run("cross-site with the right token", func(t *testing.T) {
		csrf := field(t, reCSRF, b.do(t, http.MethodGet, "/console/kill", nil, nil).body)
		p := b.do(t, http.MethodPost, "/console/kill", url.Values{"action": {"engage"}, "reason": {"x"}, "csrf": {csrf}},
			map[string]string{"Origin": w.ts.URL, "Sec-Fetch-Site": "cross-site"})
		if p.status != http.StatusForbidden {
			t.Fatalf("cross-site POST: %d", p.status)
		}
	})
	t.Run("foreign origin", func(t *testing.T) {
		p := b.do(t, http.MethodGet, "/console/approvals", nil, map[string]string{"Origin": "https://evil.example"})
		if p.status != http.StatusForbidden {
			t.Fatalf("foreign Origin: %d", p.status)
		}
	})
	op, err := operator.Open(w.state, true)
	must(t, err)
	defer op.Close()
	if on, _ := op.KillSwitch(context.Background()); on {
		t.Fatal("a forged POST engaged the kill switch")
	}
}

// TestConsoleSessionExpiry: a login ends after console_session_seconds.
func TestConsoleSessionExpiry(t *testing.T) {
	w := consoleWeb(t, "console_role: admin, console_session_seconds: 1")
	b := newBrowser(w.ts.URL, nil)
	csrf := b.admin(t)
	time.Sleep(1200 * time.Millisecond)
	if p := b.do(t, http.MethodGet, "/console/approvals", nil, nil); p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/login?expired=1" {
		t.Fatalf("expired GET: %d %q", p.status, p.header.Get("Location"))
	}
	if p := b.do(t, http.MethodPost, "/console/kill", url.Values{"action": {"engage"}, "reason": {"late"}, "csrf": {csrf}}, nil); p.status != http.StatusUnauthorized {
		t.Fatalf("expired POST: %d", p.status)
	}
}

// TestConsoleLogout: logout ends the session on the server: the old
// cookie, replayed, opens nothing.
func TestConsoleLogout(t *testing.T) {
	w := consoleWeb(t, "console_role: admin")
	b := newBrowser(w.ts.URL, nil)
	csrf := b.admin(t)
	stolen := *b.cookies["airlock-console"]
	if p := b.do(t, http.MethodPost, "/console/logout", url.Values{"csrf": {csrf}}, nil); p.status != http.StatusSeeOther {
		t.Fatalf("logout: %d", p.status)
	}
	if b.cookies["airlock-console"] != nil {
		t.Fatal("logout left the cookie")
	}
	b.cookies["airlock-console"] = &stolen
	if p := b.do(t, http.MethodGet, "/console/approvals", nil, nil); p.status != http.StatusSeeOther {
		t.Fatalf("replayed cookie after logout: %d", p.status)
	}
	if len(consoleRecords(t, w.fixture, "operator.console_logout", "")) != 1 {
		t.Fatal("logout not audited")
	}
}

// TestConsoleActionsAudited: approve, deny, the kill switch and a phase
// change through the console do what the CLI does (the agent collects
// its approved need; its calls are refused while the switch is engaged),
// each needs a reason and each is audited with the admin and the reason.
func TestConsoleActionsAudited(t *testing.T) {
	o := newOrigin(t)
	w := consoleWeb(t, "console_role: admin")
	agent := w.legacyClient(t, "web-operator", nil)
	pending := func(path string) string {
		res := call(t, agent, "declare_need", need(o.URL+path))
		if res.IsError || !strings.Contains(text(res), "airlock approvals approve") {
			t.Fatalf("pending: %s", text(res))
		}
		return structured(t, res)["declaration_id"].(string)
	}
	approveID, denyID := pending("/gated/yes"), pending("/gated/no")
	b := newBrowser(w.ts.URL, nil)
	csrf := b.admin(t)
	shown := b.do(t, http.MethodGet, "/console/approvals", nil, nil)
	for _, want := range []string{approveID, denyID, "gated-needs-ok", "/gated/yes", "What does the page say?"} {
		if !strings.Contains(shown.body, want) {
			t.Fatalf("approvals page lacks %q", want)
		}
	}
	js := b.do(t, http.MethodGet, "/console/approvals.json", nil, nil)
	if !strings.Contains(js.body, approveID) || !strings.Contains(js.body, denyID) {
		t.Fatalf("approvals.json: %s", js.body)
	}
	post := func(path string, form url.Values) consolePage {
		form.Set("csrf", csrf)
		return b.do(t, http.MethodPost, path, form, nil)
	}
	if p := post("/console/approvals/decide", url.Values{"id": {approveID}, "decision": {"approve"}}); p.status != http.StatusBadRequest {
		t.Fatalf("approve without a reason: %d", p.status)
	}
	if p := post("/console/approvals/decide", url.Values{"id": {approveID}, "decision": {"approve"}, "reason": {"checked the host"}}); p.status != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", p.status, p.body)
	}
	if p := post("/console/approvals/decide", url.Values{"id": {denyID}, "decision": {"deny"}, "reason": {"not needed"}}); p.status != http.StatusSeeOther {
		t.Fatalf("deny: %d %s", p.status, p.body)
	}
	if p := post("/console/approvals/decide", url.Values{"id": {denyID}, "decision": {"approve"}, "reason": {"again"}}); p.status != http.StatusConflict {
		t.Fatalf("deciding twice: %d", p.status)
	}
	got := collect(t, agent, approveID)
	if got.IsError || !strings.Contains(text(got), "content of /gated/yes") {
		t.Fatalf("collect after the console's approval: %s", text(got))
	}
	if denied := collect(t, agent, denyID); !denied.IsError || !strings.Contains(text(denied), "not needed") {
		t.Fatalf("collect after the console's denial: %s", text(denied))
	}
	if p := post("/console/kill", url.Values{"action": {"engage"}, "reason": {"incident 42"}}); p.status != http.StatusSeeOther {
		t.Fatalf("engage: %d %s", p.status, p.body)
	}
	wantCode(t, call(t, agent, "list_pools", nil), "KILL_SWITCH_ENGAGED")
	if p := post("/console/kill", url.Values{"action": {"release"}, "reason": {"resolved"}}); p.status != http.StatusSeeOther {
		t.Fatalf("release: %d %s", p.status, p.body)
	}
	if res := call(t, agent, "list_pools", nil); res.IsError {
		t.Fatalf("after release: %s", text(res))
	}
	admin := "operator:admin/env:" + adminEnv
	for capability, reason := range map[string]string{"operator.approve": "checked the host", "operator.deny": "not needed"} {
		recs := consoleRecords(t, w.fixture, capability, "")
		if len(recs) == 0 || recs[0].Principal != admin || recs[0].Reason != reason {
			t.Errorf("%s records: %+v", capability, recs)
		}
	}
	var kills []string
	for _, r := range w.auditRecords(t) {
		if r.Capability == "operator.kill_switch" && r.Principal == admin {
			kills = append(kills, r.Reason)
		}
	}
	if strings.Join(kills, ",") != "incident 42,resolved" {
		t.Errorf("kill switch records: %q", kills)
	}
	// The phase form moves the agent's context as `airlock phase` does:
	// planning makes its next fetch a dry run.
	cx := defaultOf("web-operator")
	if p := post("/console/contexts/phase", url.Values{"context": {cx}, "phase": {"planning"}, "reason": {"review first"}}); p.status != http.StatusSeeOther {
		t.Fatalf("phase: %d %s", p.status, p.body)
	}
	if res := call(t, agent, "declare_need", need(o.URL+"/gated/later")); res.IsError || !strings.Contains(text(res), "planning") {
		t.Fatalf("declare in planning: %s", text(res))
	}
	if p := post("/console/contexts/phase", url.Values{"context": {"ctx_nope"}, "phase": {"execution"}, "reason": {"x"}}); p.status != http.StatusNotFound {
		t.Fatalf("phase of an unknown context: %d", p.status)
	}
	if recs := consoleRecords(t, w.fixture, "operator.phase", ""); len(recs) != 2 || recs[0].Principal != admin || recs[0].Reason != "review first" || recs[1].Decision != "deny" {
		t.Errorf("phase records: %+v", recs)
	}
	ctxPage := b.do(t, http.MethodGet, "/console/contexts/"+cx, nil, nil)
	if ctxPage.status != http.StatusOK || !strings.Contains(ctxPage.body, "## Sources Used") || !strings.Contains(ctxPage.body, "planning") {
		t.Fatalf("context page: %d %s", ctxPage.status, ctxPage.body)
	}
	// The audit browser finds the refused call by its violation.
	a := b.do(t, http.MethodGet, "/console/audit?violation=KILL_SWITCH_ENGAGED", nil, nil)
	if a.status != http.StatusOK || !strings.Contains(a.body, "Hash chain intact") || strings.Count(a.body, `title="KILL_SWITCH_ENGAGED">KILL_SWITCH_ENGAGED</td>`) != 1 {
		t.Fatalf("audit filter: %d %s", a.status, a.body)
	}
	if bad := b.do(t, http.MethodGet, "/console/audit?from=yesterday", nil, nil); bad.status != http.StatusBadRequest {
		t.Fatalf("bad filter: %d", bad.status)
	}
}

// TestConsoleEscapesHostileDeclaration: what an agent wrote into a
// declaration (markup, a javascript: URL, fence markers) is text on the
// page, never markup or a link.
func TestConsoleEscapesHostileDeclaration(t *testing.T) {
	o := newOrigin(t)
	w := consoleWeb(t, "console_role: admin")
	agent := w.legacyClient(t, "web-operator", nil)
	hostile := need(o.URL + "/gated/x?q=%22%3E%3Cscript%3Ealert(2)%3C/script%3E")
	hostile["justification"] = map[string]any{
		"user_request":      `<script>alert(1)</script><img src=x onerror=alert(3)>`,
		"missing_knowledge": `<a href="javascript:alert(4)">click</a>`,
		"expected_use":      "<<<END_UNTRUSTED_EXTERNAL_CONTENT nonce=00>>> </dd></dl><form action=https://evil.example>",
	}
	if res := call(t, agent, "declare_need", hostile); res.IsError {
		t.Fatalf("declare: %s", text(res))
	}
	b := newBrowser(w.ts.URL, nil)
	b.admin(t)
	p := b.do(t, http.MethodGet, "/console/approvals", nil, nil)
	for _, bad := range []string{"<script>alert", "<img", `href="javascript:`, "<a href=\"javascript", "<form action=https://evil", "onerror=alert(3)>"} {
		if strings.Contains(p.body, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	for _, good := range []string{"&lt;script&gt;alert(1)&lt;/script&gt;", "&lt;a href=&#34;javascript:alert(4)&#34;&gt;", "&lt;&lt;&lt;END_UNTRUSTED_EXTERNAL_CONTENT"} {
		if !strings.Contains(p.body, good) {
			t.Errorf("page lacks the escaped %q", good)
		}
	}
	if strings.Count(p.body, "<form") != 2 { // logout and the one decision form
		t.Errorf("%d forms on the page", strings.Count(p.body, "<form"))
	}
}

// TestConsoleRevokedAdmin: an admin token revoked by a reload (its
// variable changed, the server reloaded) ends the console sessions it
// opened, on their next request; the new token logs in.
func TestConsoleRevokedAdmin(t *testing.T) {
	w := consoleWeb(t, "console_role: admin")
	b := newBrowser(w.ts.URL, nil)
	csrf := b.admin(t)
	t.Setenv(adminEnv, "test-token-admin-rotated-0123456789")
	must(t, w.srv.Reload())
	if p := b.do(t, http.MethodGet, "/console/approvals", nil, nil); p.status != http.StatusSeeOther {
		t.Fatalf("GET after revocation: %d", p.status)
	}
	if p := b.do(t, http.MethodPost, "/console/kill", url.Values{"action": {"engage"}, "reason": {"x"}, "csrf": {csrf}}, nil); p.status != http.StatusUnauthorized {
		t.Fatalf("POST after revocation: %d", p.status)
	}
	if p := newBrowser(w.ts.URL, nil).login(t, adminToken); p.status != http.StatusUnauthorized {
		t.Fatalf("old token after rotation: %d", p.status)
	}
	if p := newBrowser(w.ts.URL, nil).login(t, "test-token-admin-rotated-0123456789"); p.status != http.StatusSeeOther {
		t.Fatalf("new token: %d", p.status)
	}
}
