package server

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/edge/edge"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/operator/console"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// handleConsole mounts the web console (package console) at /console. It
// is always mounted and answers 404 while transports.http.console_role is
// unset, so a reload can turn it on or off.
func (s *Server) handleConsole(mux *http.ServeMux) error {
	c, err := console.New(operator.Attach(s.r.Lend(), console.TransportName), consoleAdmin{s}, &console.Options{
		Logger: s.log,
		SessionTTL: func() time.Duration {
			return config.Seconds(s.r.Config().Transports.HTTP.ConsoleSessionSeconds)
		},
		Refuse: func(r *http.Request, ref console.Refusal) {
			s.refusals.Refuse(edge.Refusal{Transport: console.TransportName, Remote: edge.RemoteHost(r.RemoteAddr),
				Principal: ref.Principal, Code: string(ref.Code), Kind: ref.Kind, Reason: ref.Reason})
		},
		Config:        s.r.Config,
		Authenticated: func(r *http.Request) { edge.ConnFrom(r.Context()).MarkAuthenticated() },
	})
	if err != nil {
		return err
	}
	h := s.consoleEdge(c)
	mux.Handle(console.Path+"/", h)
	mux.Handle(console.Path, h)
	return nil
}

// consoleEdge is the console's part of the HTTP edge: not the MCP bearer
// guard (the console has its own login), but the same Origin allow-list
// (a cross-site page, or DNS rebinding against a local Airlock, is
// refused before any console code runs), and for a POST the same body
// bounds as /mcp: a form, within body_read_timeout and max_body_bytes,
// then the write deadline.
func (s *Server) consoleEdge(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cfg := s.r.Config().Transports.HTTP
		if cfg.ConsoleRole == "" {
			http.NotFound(w, r) // no admin configured: no console
			return
		}
		ref := edge.Refusal{Transport: console.TransportName, Remote: edge.RemoteHost(r.RemoteAddr), Principal: "anonymous"}
		if !s.origins.Load().Allowed(r.Header.Get("Origin")) {
			ref.Code, ref.Reason = string(violation.OriginRefused), r.Method+" "+r.URL.Path+" refused: Origin not on transports.http.allowed_origins"
			s.refuseEdge(w, ref, http.StatusForbidden, mcp.INVALID_REQUEST, nil, "Forbidden: this Origin may not reach Airlock (transports.http.allowed_origins)")
			return
		}
		if r.URL.Path == console.Path {
			http.Redirect(w, r, console.Path+"/", http.StatusSeeOther)
			return
		}
		if r.Method == http.MethodPost {
			body, ok := s.guardBody(w, r, cfg, ref, "application/x-www-form-urlencoded")
			if !ok {
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}

// consoleAdmin is the console's admin check over the server's current
// authenticator and configuration: a static token of
// transports.http.console_role. Both are read on every call, so a reload
// that revokes a token or changes the role ends its console sessions.
type consoleAdmin struct{ s *Server }

var _ console.Admin = consoleAdmin{}

// Login checks token as the MCP edge does (authenticator.static:
// constant-time over every credential); the credential id is the hex
// SHA-256 the authenticator holds, never the token.
func (a consoleAdmin) Login(token string) (string, string, error) {
	role := a.s.r.Config().Transports.HTTP.ConsoleRole
	id, ok := a.s.auth.Load().static(token)
	switch {
	case !ok:
		return "", "", console.ErrUnknownToken
	case role == "" || id.Role != role:
		return id.Principal, "", fmt.Errorf("role %s: %w", id.Role, console.ErrNotAdmin)
	}
	sum := sha256.Sum256([]byte(token))
	return id.Principal, hex.EncodeToString(sum[:]), nil
}

// Valid: the credential is still loaded, for console_role.
func (a consoleAdmin) Valid(credential string) bool {
	role := a.s.r.Config().Transports.HTTP.ConsoleRole
	want, err := hex.DecodeString(credential)
	if role == "" || err != nil || len(want) != sha256.Size {
		return false
	}
	ok := false
	for _, c := range a.s.auth.Load().creds {
		if subtle.ConstantTimeCompare(c.sum[:], want) == 1 && c.role == role {
			ok = true
		}
	}
	return ok
}
