package console

import (
	"errors"
	"net/http"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

type loginData struct {
	LoginToken string
	Expired    bool
}

// loginPage shows the login form with a fresh pre-session token, also set
// as a cookie: a login POST must carry both, equal (double submit), so a
// cross-site page cannot log the admin's browser into a session of its
// choosing (login CSRF).
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	tok := randomToken()
	http.SetCookie(w, newCookie(r, cookieLogin, tok, int(loginTokenMaxAge/time.Second)))
	c.render(w, http.StatusOK, "login", page{Title: "Log in", Data: loginData{LoginToken: tok, Expired: r.URL.Query().Get("expired") != ""}})
}

// login checks the admin token and starts a session. Every refusal is
// audited (UNAUTHENTICATED for an unknown token, INSUFFICIENT_SCOPE for
// another role's); the token is never recorded.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	if !tokensEqual(r.PostForm.Get("login_token"), cookieValue(r, cookieLogin)) {
		c.refuse(w, r, "anonymous", violation.CSRFRefused, "missing or wrong login token", "POST "+Path+"/login refused: the form does not carry its login token")
		return
	}
	principal, credential, err := c.admin.Login(r.PostForm.Get("token"))
	if err != nil {
		code, kind := violation.Unauthenticated, "console token not recognised"
		who := "anonymous"
		if errors.Is(err, ErrNotAdmin) {
			code, kind, who = violation.InsufficientScope, "console token of a non-admin role", principal
		}
		c.opts.Refuse(r, Refusal{Principal: who, Code: code, Kind: kind, Reason: "POST " + Path + "/login refused: " + err.Error()})
		c.render(w, http.StatusUnauthorized, "login", page{Title: "Log in", Error: "Login refused: that is not an admin token.",
			Data: loginData{LoginToken: r.PostForm.Get("login_token")}})
		return
	}
	if err := c.op.RecordLogin(r.Context(), principal, "console login", nil); err != nil {
		// A login that cannot be audited does not happen (fail closed).
		status, msg := c.publicError(err)
		c.render(w, status, "login", page{Title: "Log in", Error: msg, Data: loginData{LoginToken: r.PostForm.Get("login_token")}})
		return
	}
	ttl := c.opts.SessionTTL()
	id := c.sessions.create(principal, credential, c.opts.Now(), ttl)
	http.SetCookie(w, newCookie(r, cookieLogin, "", -1))
	http.SetCookie(w, newCookie(r, cookieSession, id, int(ttl/time.Second)))
	c.opts.Authenticated(r)
	http.Redirect(w, r, Path+"/approvals", http.StatusSeeOther)
}

// logout ends the session on the server, not only in the browser.
func (c *Console) logout(w http.ResponseWriter, r *http.Request, s *session) {
	c.sessions.remove(cookieValue(r, cookieSession))
	http.SetCookie(w, newCookie(r, cookieSession, "", -1))
	if err := c.op.RecordLogout(r.Context(), s.principal, "console logout", nil); err != nil {
		c.log.Error("console: auditing a logout", "err", err)
	}
	http.Redirect(w, r, Path+"/login", http.StatusSeeOther)
}
