package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/airlock-dev/airlock/internal/edge/wire"
	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/kit/percall"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/sources"
)

// sessionGate enforces session hygiene on /mcp for the session-oriented
// protocol revisions, before mcp-go sees the request:
//
//   - initialize mints the session here, in the store, bound to the
//     authenticated principal and counted against its cap: at the cap the
//     principal's least recently used session is evicted (audited, and its
//     transport state dropped), so a client that never closes its sessions
//     — a crashed one, or one whose DELETE carries no token — is never
//     locked out, while one that opens them without end holds no more than
//     the cap (issue 26 item 3; TestSessionCapEvictsLeastRecentlyUsed);
//   - every other request must carry a session id this server issued, that
//     is open, not idle past the timeout, and the caller's own: else 400
//     (none), 404 (unknown, expired or another principal's — the answer
//     does not reveal which), each refusal audited with its SESSION_* code;
//     and its context must be one this credential may use (its role's,
//     within its binding): else 403 with the CONTEXT_* code — one OAuth
//     subject's other client cannot ride it out of its binding;
//   - DELETE closes the session in the store (its context lives on). It is
//     authenticated like any request: without a token the guard answers 401
//     and nothing is closed, because a session id is not a credential
//     (proxies and logs see it) and another signed-in principal may not
//     close it either (TestUnauthenticatedDeleteClosesNothing).
//
// Sessionless requests (2026-07-28) pass through: they carry no session,
// and their context is the principal's.
//
// A quick call waits for its slot first, shallow, and before its memo of
// the store's state is made (admission.go).
func (s *Server) sessionGate(next http.Handler) http.Handler {
	gated := s.checkSession(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		checked, _ := r.Context().Value(checkedKey{}).(*wire.Message) // the POST body as the guard read, bounded and checked it
		if r.Method == http.MethodPost && s.isQuick(checked) {
			s.serveAdmitted(w, r, checked, gated)
			return
		}
		gated.ServeHTTP(w, r)
	})
}

// checkSession is sessionGate's checks, for a request admitted to run.
func (s *Server) checkSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		checked, _ := r.Context().Value(checkedKey{}).(*wire.Message)
		if r.Method == http.MethodPost {
			// One probe of the store's state serves the request's reads
			// (its session, the kill switch, its contexts); it is made
			// after the request arrived (package percall). Not on a GET:
			// a stream outlives any one call. The answer's long text and
			// pages are spliced in as mcp-go writes it (httpsplice.go).
			sw := &spliceWriter{ResponseWriter: w}
			w = sw
			r = r.WithContext(withSplicer(percall.With(r.Context()), &sw.b))
		}
		id, _ := r.Context().Value(identityKey{}).(identity)
		var msg wire.Message
		if checked != nil {
			msg = *checked
		}
		if mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || mcp.IsModernProtocol(msg.MetaVersion) {
			if msg.Method == string(mcp.MethodResourcesRead) && mcp.IsModernProtocol(msg.MetaVersion) && !isPoolURI(msg.URI) {
				resourceNotFound(w, msg)
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		cfg := s.r.Config().Transports.HTTP
		if r.Method == http.MethodPost && msg.Method == string(mcp.MethodInitialize) {
			sess, err := s.r.OpenSession(r.Context(), runner.SessionParams{
				ID: "mcp-session-" + uuid.NewString(), Principal: id.Principal, Role: id.Role, Transport: id.Transport,
				ContextHandle: id.ContextHandle, Binding: id.Binding, Elicitation: msg.Elicitation, ClientID: id.ClientID,
				MaxOpen: cfg.MaxSessionsPerPrincipal, Idle: cfg.SessionIdleTimeout(), OnEvict: s.dropStreamable,
			})
			if err != nil {
				s.refuseHTTP(w, r, id, err, "")
				return
			}
			next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), mintedKey{}, sess.ID())))
			return
		}
		sid := r.Header.Get(mcpserver.HeaderKeySessionID)
		if sid == "" {
			s.refuseHTTP(w, r, id, violation.New(violation.SessionRequired,
				"this request needs the Mcp-Session-Id from initialize (or protocol 2026-07-28, which has no sessions)"), "")
			return
		}
		sess, err := s.r.AttachSession(r.Context(), sid, id.Principal, id.Role, id.Binding, cfg.SessionIdleTimeout())
		if err != nil {
			s.refuseHTTP(w, r, id, err, sid)
			return
		}
		if r.Method == http.MethodDelete {
			s.r.CloseSession(r.Context(), sid, "deleted by the client")
		}
		// The session checked here is the one the request's tool calls run
		// in: handed on, not looked up (and touched) a second time.
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), attachedKey{}, sess)))
	})
}

// refuseHTTP answers a session refusal with its status and audits it.
func (s *Server) refuseHTTP(w http.ResponseWriter, r *http.Request, id identity, err error, presented string) {
	var v *violation.Error
	if !errors.As(err, &v) {
		s.log.Error("session gate", "err", err)
		v = violation.Wrap(violation.Unavailable, err, "the session store is unavailable")
	}
	status := http.StatusServiceUnavailable
	switch v.Code {
	case violation.SessionRequired:
		status = http.StatusBadRequest
	case violation.SessionUnknown, violation.SessionExpired, violation.SessionForeign:
		status = http.StatusNotFound
	case violation.ContextInvalid, violation.ContextOutsideBinding, violation.ContextRequired:
		status = http.StatusForbidden
	}
	s.r.RecordSessionRefusal(r.Context(), id.Transport, id.Principal, id.Role, v.Code, presented,
		fmt.Sprintf("%s %s refused: %s", r.Method, r.URL.Path, v.Message))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": mcp.INVALID_REQUEST, "message": publicRefusal(v).Public()}})
}

// publicRefusal is what the caller may see of a session refusal: another
// principal's live session reads exactly like an id never issued, so a
// stolen id cannot be tested for liveness. The audit record keeps the
// real code.
func publicRefusal(v *violation.Error) *violation.Error {
	if v.Code == violation.SessionForeign {
		return violation.New(violation.SessionUnknown, "%s", v.Message)
	}
	return v
}

// resourceNotFound answers resources/read under 2026-07-28 for a URI that
// is not a pool file (pool files go to the resource template, read through
// the runner): the revision wants the URI back in the error's data
// (SEP-2164), which mcp-go's handler leaves out.
func resourceNotFound(w http.ResponseWriter, msg wire.Message) {
	id := msg.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	uri := msg.URI
	if len(uri) > 2048 {
		uri = uri[:2048]
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": mcp.INVALID_PARAMS, "message": "resource not found: Airlock serves pool files only, as " + sources.FileURITemplate,
			"data": map[string]any{"uri": uri}}})
}

func isPoolURI(uri string) bool { _, _, ok := sources.ParseFileURI(uri); return ok }

// mintedKey carries the id the gate minted for an initialize to mcp-go's
// session id manager.
type mintedKey struct{}

// attachedKey carries the runner session the gate checked for a request.
type attachedKey struct{}

// issuedSessions is mcp-go's session id manager for /mcp: the gate has
// minted (initialize) or checked (everything else) the id before mcp-go
// asks, so Generate hands over the minted id and Validate and Terminate
// agree.
type issuedSessions struct{}

func (issuedSessions) ResolveSessionIdManager(r *http.Request) mcpserver.SessionIdManager {
	m := gateChecked{}
	if r != nil {
		m.minted, _ = r.Context().Value(mintedKey{}).(string)
	}
	return m
}

type gateChecked struct{ minted string }

func (g gateChecked) Generate() string {
	if g.minted == "" {
		// Only reached by a path the gate does not cover (a GET opening
		// a stream without a session): an id that nothing will accept.
		return "mcp-session-unissued-" + uuid.NewString()
	}
	return g.minted
}
func (gateChecked) Validate(string) (bool, error)  { return false, nil }
func (gateChecked) Terminate(string) (bool, error) { return false, nil }

// dropStreamable drops what mcp-go holds for a streamable HTTP session the
// store evicted under the session cap. mcp-go would keep it until its idle
// sweep, so a client opening sessions without end would cost this process
// a session's memory per initialize for the whole idle timeout; dropped
// here, the process holds no more than the cap's worth per principal
// (TestShortLivedClientsNeverLockedOut). mcp-go releases one
// session's state only when it serves that session's DELETE, so the server
// hands each of its streamable handlers one. The gate is not crossed: the
// store closed the session already, and mcp-go asks gateChecked, which
// lets it terminate.
func (s *Server) dropStreamable(sessionID string) {
	s.handlersMu.Lock()
	handlers := s.streamables
	s.handlersMu.Unlock()
	for _, h := range handlers {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, PathStreamable, nil)
		if err != nil {
			return
		}
		req.Header.Set(mcpserver.HeaderKeySessionID, sessionID)
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
		h.ServeHTTP(discardResponse{}, req)
	}
}

// discardResponse is the ResponseWriter of the server's own DELETEs.
type discardResponse struct{}

func (discardResponse) Header() http.Header         { return http.Header{} }
func (discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (discardResponse) WriteHeader(int)             {}
