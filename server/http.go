package server

import (
	"context"
	"net/http"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/airlock-dev/airlock/runner"
)

// Paths served by Handler.
const (
	PathStreamable = "/mcp"
	PathSSE        = "/sse"
	PathMessage    = "/message"
)

// Transport names as recorded in the audit trail.
const (
	transportStreamable = "streamable-http"
	transportSSE        = "sse"
)

// HeaderContext names the child context a request runs in: a handle an
// operator got from `airlock context create`.
const HeaderContext = "Airlock-Context"

// Handler serves streamable HTTP at /mcp — the session-oriented revisions
// (up to 2025-11-25) and the sessionless 2026-07-28 side by side — and SSE
// at /sse (+ /message), every request authenticated first and every
// session-oriented request checked against the server's own sessions.
func (s *Server) Handler() http.Handler {
	ctxFunc := func(ctx context.Context, r *http.Request) context.Context {
		if id, ok := r.Context().Value(identityKey{}).(identity); ok {
			ctx = withIdentity(ctx, id)
		}
		if sess, ok := r.Context().Value(attachedKey{}).(*runner.Session); ok {
			ctx = context.WithValue(ctx, attachedKey{}, sess)
		}
		return ctx
	}
	streamable := mcpserver.NewStreamableHTTPServer(s.mcp,
		mcpserver.WithEndpointPath(PathStreamable),
		mcpserver.WithHTTPContextFunc(ctxFunc),
		mcpserver.WithSessionIdManagerResolver(issuedSessions{}),
		// mcp-go's own per-session memory goes with the idle timeout too.
		mcpserver.WithSessionIdleTTL(s.r.Config().Transports.HTTP.SessionIdleTimeout()),
	)
	sse := mcpserver.NewSSEServer(s.mcp,
		mcpserver.WithSSEEndpoint(PathSSE),
		mcpserver.WithMessageEndpoint(PathMessage),
		mcpserver.WithSSEContextFunc(ctxFunc),
		mcpserver.WithUseFullURLForMessageEndpoint(false),
	)
	mux := http.NewServeMux()
	mux.Handle(PathStreamable, s.authenticate(transportStreamable, s.sessionGate(streamable)))
	mux.Handle(PathSSE, s.authenticate(transportSSE, sse))
	mux.Handle(PathMessage, s.authenticate(transportSSE, sse))
	return mux
}

// authenticate rejects requests without a valid bearer token with 401 and
// an audit record for principal "anonymous", and limits the body size.
func (s *Server) authenticate(transport string, next http.Handler) http.Handler {
	maxBody := s.r.Config().Transports.HTTP.MaxBodyBytes
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := s.auth.Load().identify(r)
		if !ok {
			s.r.RecordAuthFailure(r.Context(), transport, r.RemoteAddr, r.Header.Get("Authorization") != "")
			w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
			http.Error(w, "unauthorized: a valid bearer token is required", http.StatusUnauthorized)
			return
		}
		id.Transport = transport
		id.ContextHandle = r.Header.Get(HeaderContext)
		r.Body = http.MaxBytesReader(w, r.Body, maxBody)
		next.ServeHTTP(w, r.WithContext(withIdentity(r.Context(), id)))
	})
}
