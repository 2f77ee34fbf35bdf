package server

import (
	"context"
	"errors"
	"github.com/airlock-dev/airlock/internal/kit/origin"
	"log/slog"
	"net"
	"net/http"
	"time"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/edge/edge"
	"github.com/airlock-dev/airlock/internal/edge/oauth"
	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/execution/tokenexchange"
	"github.com/airlock-dev/airlock/internal/kit/violation"
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
// session-oriented request checked against the server's own sessions;
// and the operator endpoints /metrics, /healthz and /readyz (ops.go).
func (s *Server) Handler() http.Handler {
	ctxFunc := func(ctx context.Context, r *http.Request) context.Context {
		if id, ok := r.Context().Value(identityKey{}).(identity); ok {
			ctx = withIdentity(ctx, id)
		}
		if sess, ok := r.Context().Value(attachedKey{}).(*runner.Session); ok {
			ctx = context.WithValue(ctx, attachedKey{}, sess)
		}
		if c, ok := tokenexchange.CallerFrom(r.Context()); ok {
			ctx = tokenexchange.WithCaller(ctx, c)
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
	s.handlersMu.Lock()
	s.streamables = append(s.streamables, streamable)
	s.handlersMu.Unlock()
	sse := mcpserver.NewSSEServer(s.mcp,
		mcpserver.WithSSEEndpoint(PathSSE),
		mcpserver.WithMessageEndpoint(PathMessage),
		mcpserver.WithSSEContextFunc(ctxFunc),
		mcpserver.WithUseFullURLForMessageEndpoint(false),
		mcpserver.WithSessionIDGenerator(s.mintSSESession),
	)
	mux := http.NewServeMux()
	mux.Handle(PathStreamable, s.guard(transportStreamable, s.sessionGate(streamable)))
	mux.Handle(PathSSE, s.guard(transportSSE, s.sseStream(sse)))
	mux.Handle(PathMessage, s.guard(transportSSE, s.sseMessages(sse)))
	mux.Handle(oauth.WellKnownPath, s.protectedResourceMetadata())
	mux.Handle(oauth.WellKnownPath+"/", s.protectedResourceMetadata())
	s.handleOps(mux)
	s.handleOperator(mux) // operator_http.go
	if err := s.handleConsole(mux); err != nil {
		// Only embedded templates that do not parse get here, which the
		// console's tests catch; the MCP endpoints still serve.
		s.log.Error("web console unavailable", "err", err)
	}
	s.handleIndex(mux) // every other path: what this is, where /mcp is (index.go)
	return mux
}

// ErrAnonymousRemote refuses anonymous_role on an address other hosts can
// reach, unless the configuration forces it.
var ErrAnonymousRemote = errors.New("transports.http.anonymous_role on a non-loopback address: anyone who can reach the port would get that role; bind to 127.0.0.1, remove anonymous_role, or set transports.http.allow_anonymous_remote: true")

// ServeHTTP serves Handler on ln until ctx ends, behind the edge's bounds:
// connections tracked (at most max_connections, max_unauthenticated_per_address
// per remote address before authenticating; the oldest unauthenticated one
// makes room), header and idle timeouts on the server, body and write
// deadlines per request (see guard). On a non-loopback address an
// anonymous_role is refused unless forced, and then warned about.
func (s *Server) ServeHTTP(ctx context.Context, ln net.Listener) error {
	cfg := s.r.Config().Transports.HTTP
	if cfg.AnonymousRole != "" && !origin.IsLoopbackAddr(ln.Addr().String()) {
		if !cfg.AllowAnonymousRemote {
			return ErrAnonymousRemote
		}
		s.log.Warn("ANONYMOUS ACCESS FROM THE NETWORK: every request without a token gets role "+cfg.AnonymousRole,
			"addr", ln.Addr().String(), "setting", "transports.http.allow_anonymous_remote")
	}
	s.servingHTTP.Store(true)
	s.auth.Load().warn(s.log)
	proxies, err := cfg.ProxyPrefixes() // checked at load; refused here too, never ignored
	if err != nil {
		return err
	}
	tracker := edge.NewTracker(edge.ConnLimits{Max: cfg.MaxConnections, MaxUnauthenticatedPerAddr: cfg.MaxUnauthenticatedPerAddress, Proxies: proxies},
		func(remote, reason string) {
			s.refusals.Refuse(edge.Refusal{Transport: "http", Remote: remote, Principal: "anonymous", Code: string(violation.ConnectionLimit), Reason: reason})
		})
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: config.Seconds(cfg.ReadHeaderTimeoutSeconds),
		IdleTimeout:       config.Seconds(cfg.IdleTimeoutSeconds),
		MaxHeaderBytes:    64 << 10,
		ConnContext:       edge.WithConn,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(tracker.Listener(ln)) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := hs.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}
