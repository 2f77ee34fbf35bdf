package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/google/uuid"

	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// An SSE session is bound to the credential that opened its stream, as a
// streamable HTTP session is bound at initialize (issue 26 item 4).
//
// The legacy SSE transport names a session only by the sessionId in the
// message URL (POST /message?sessionId=…), and mcp-go answers every message
// on that session's stream. Before this binding, the first caller to post
// a tool call for a session became its owner: principal A posting to B's
// fresh session before B's first call ran as A, its answer landed on B's
// stream, and B was then refused as if the session were unknown. Now the
// id is minted here when /sse opens, bound to the principal, role and
// context binding of that request, and every POST naming it is checked
// before mcp-go sees it: another credential's is 404 — audited as
// SESSION_FOREIGN, answered like an id never issued (SESSION_UNKNOWN) —
// and nothing reaches the session or its stream.

// sseMinted carries, for one GET /sse, the id mintSSESession gave its
// stream, so that the binding is released when the stream ends.
type sseMinted struct{ id string }

type sseMintedKey struct{}

// sseStream serves GET /sse, releasing the stream's binding when it ends.
func (s *Server) sseStream(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m := &sseMinted{}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sseMintedKey{}, m)))
		if m.id != "" {
			s.sseOwners.Release(m.id)
		}
	})
}

// errNoIdentity: an SSE stream opened without the guard's identity, which
// the handler wiring makes impossible; it gets no session.
var errNoIdentity = errors.New("sse: no authenticated identity")

// mintSSESession is mcp-go's SSE session id generator: a fresh id, bound
// to the credential of the request that opens the stream.
func (s *Server) mintSSESession(ctx context.Context, _ *http.Request) (string, error) {
	id, ok := ctx.Value(identityKey{}).(identity)
	if !ok {
		return "", errNoIdentity
	}
	sid := "sse-" + uuid.NewString()
	s.sseOwners.Bind(sid, sseOwner(id))
	if m, ok := ctx.Value(sseMintedKey{}).(*sseMinted); ok {
		m.id = sid
	}
	return sid, nil
}

// sseOwner is who may post to an SSE session: the principal, and the role
// and context binding its credential had (an OAuth subject's other client
// may map to another role or binding, and must not borrow the session).
func sseOwner(id identity) string {
	return id.Principal + "\x00" + id.Role + "\x00" + id.Binding.String()
}

// sseMessages checks every POST /message against its session's owner
// before mcp-go sees it.
func (s *Server) sseMessages(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := r.Context().Value(identityKey{}).(identity)
		sid := r.URL.Query().Get("sessionId")
		owner, bound := s.sseOwners.Owner(sid)
		switch {
		case r.Method != http.MethodPost:
			next.ServeHTTP(w, r) // mcp-go answers 405-style, with nothing to reach
		case sid == "":
			s.refuseHTTP(w, r, id, violation.New(violation.SessionRequired, "this request needs the sessionId of the /sse stream it belongs to"), "")
		case !bound:
			s.refuseHTTP(w, r, id, violation.Wrap(violation.SessionUnknown, runner.ErrSessionUnknown, "no session with this id was issued by this server"), sid)
		case owner != sseOwner(id):
			s.refuseHTTP(w, r, id, violation.Wrap(violation.SessionForeign, runner.ErrSessionForeign, "no session with this id was issued by this server"), sid)
		default:
			next.ServeHTTP(w, r)
		}
	})
}
