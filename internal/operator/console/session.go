package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// Cookie names. Over TLS the session cookie takes the __Host- prefix,
// which browsers honour only for a Secure cookie with Path=/ and no
// Domain: a sibling subdomain or a plain-HTTP page cannot plant or
// overwrite it. Over plain HTTP (loopback: Chromium keeps Secure cookies
// for http://localhost and http://127.0.0.1, which it treats as
// potentially trustworthy origins — the browser test logs in over
// http://127.0.0.1) the prefix is not used and the cookie is scoped to
// /console.
const (
	cookieSession    = "airlock-console"
	cookieLogin      = "airlock-console-login"
	hostPrefix       = "__Host-"
	maxSessions      = 1024
	loginTokenMaxAge = 10 * time.Minute
)

// session is one console login, held server-side; the browser holds only
// its random id.
type session struct {
	principal  string
	credential string // the admin credential it was opened with (Admin.Valid)
	csrf       string
	expires    time.Time
}

// sessions maps SHA-256(id) to a session: a lookup never compares the
// secret id itself, and a memory dump holds no usable cookie.
type sessions struct {
	mu sync.Mutex
	m  map[[32]byte]*session
}

func newSessions() *sessions { return &sessions{m: map[[32]byte]*session{}} }

// create starts a session for principal and returns its id. At the bound
// the expired sessions go first, then the one closest to expiry.
func (ss *sessions) create(principal, credential string, now time.Time, ttl time.Duration) string {
	id := randomToken()
	s := &session{principal: principal, credential: credential, csrf: randomToken(), expires: now.Add(ttl)}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.m) >= maxSessions {
		var oldest [32]byte
		var at time.Time
		for k, v := range ss.m {
			if !v.expires.After(now) {
				delete(ss.m, k)
				continue
			}
			if at.IsZero() || v.expires.Before(at) {
				oldest, at = k, v.expires
			}
		}
		if len(ss.m) >= maxSessions {
			delete(ss.m, oldest)
		}
	}
	ss.m[sha256.Sum256([]byte(id))] = s
	return id
}

// get returns the live session of id; an expired one is removed.
func (ss *sessions) get(id string, now time.Time) (*session, bool) {
	k := sha256.Sum256([]byte(id))
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.m[k]
	if !ok {
		return nil, false
	}
	if !s.expires.After(now) {
		delete(ss.m, k)
		return nil, false
	}
	return s, true
}

func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	delete(ss.m, sha256.Sum256([]byte(id)))
	ss.mu.Unlock()
}

// randomToken is 256 bits from crypto/rand, base64url.
func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return base64.RawURLEncoding.EncodeToString(b)
}

// tokensEqual compares secrets in constant time.
func tokensEqual(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// cookieName is the session (or login) cookie's name for r.
func cookieName(r *http.Request, base string) string {
	if r.TLS != nil {
		return hostPrefix + base
	}
	return base
}

// newCookie is a Secure, HttpOnly, SameSite=Strict cookie: not sent on
// cross-site requests (CSRF), not readable by script (XSS cannot steal
// it), not sent over plain HTTP off loopback.
func newCookie(r *http.Request, base, value string, maxAge int) *http.Cookie {
	c := &http.Cookie{Name: cookieName(r, base), Value: value, Path: Path, MaxAge: maxAge,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode}
	if r.TLS != nil {
		c.Path = "/" // required by the __Host- prefix
	}
	return c
}

func cookieValue(r *http.Request, base string) string {
	c, err := r.Cookie(cookieName(r, base))
	if err != nil {
		return ""
	}
	return c.Value
}
