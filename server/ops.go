package server

import (
	"context"
	"github.com/airlock-dev/airlock/internal/kit/origin"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/edge/edge"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// Operator endpoints on the HTTP listener (issue 12 item 2).
const (
	PathMetrics = "/metrics"
	PathHealthz = "/healthz"
	PathReadyz  = "/readyz"
)

// readyTimeout bounds /readyz: a store whose write lock cannot be had in
// this long is not ready.
const readyTimeout = 2 * time.Second

// transportOps names the operator endpoints in edge refusal records.
const transportOps = "ops"

// handleOps adds /metrics (when the server has metrics), /healthz and
// /readyz to mux.
func (s *Server) handleOps(mux *http.ServeMux) {
	if s.metrics != nil {
		mux.Handle(PathMetrics, s.metricsGate(s.metrics.Handler()))
	}
	mux.Handle(PathHealthz, s.probeGate(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		plain(w, http.StatusOK, "ok\n")
	})))
	mux.Handle(PathReadyz, s.probeGate(http.HandlerFunc(s.readyz)))
}

// readyz answers 200 when the runner is ready (the store takes a write,
// the witness files are reachable), else 503. The cause goes to the log,
// not to whoever probes: the endpoint is unauthenticated.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.r.Ready(ctx); err != nil {
		if s.notReady.CompareAndSwap(false, true) {
			s.log.Warn("not ready", "err", err)
		}
		plain(w, http.StatusServiceUnavailable, "not ready\n")
		return
	}
	if s.notReady.CompareAndSwap(true, false) {
		s.log.Info("ready again")
	}
	plain(w, http.StatusOK, "ready\n")
}

// probeGate lets anyone GET the health endpoints — load balancers and
// orchestrators probe without tokens — but keeps the browser Origin check
// (a cross-site page learns nothing, even by DNS rebinding) and refuses
// other methods. They say only ok / ready / not ready.
func (s *Server) probeGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.opsPreamble(w, r) {
			return
		}
		next.ServeHTTP(w, r)
	})
}

// metricsGate decides who reads /metrics: a loopback peer (a local
// Prometheus or agent), or a request whose bearer token maps to
// transports.http.metrics_role. Anyone else is refused and audited: from
// the network by default nobody, and never the anonymous role — the
// series name tools, violation codes and load, which is reconnaissance
// for an attacker (TestMetricsAccess).
func (s *Server) metricsGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.opsPreamble(w, r) {
			return
		}
		if origin.IsLoopbackAddr(r.RemoteAddr) {
			next.ServeHTTP(w, r)
			return
		}
		ref := edge.Refusal{Transport: transportOps, Remote: edge.RemoteHost(r.RemoteAddr), Principal: "anonymous"}
		role := s.r.Config().Transports.HTTP.MetricsRole
		if role == "" {
			ref.Code, ref.Reason = string(violation.InsufficientScope), "GET /metrics refused: not a loopback peer and transports.http.metrics_role is not set"
			s.refuseEdge(w, ref, http.StatusForbidden, mcp.INVALID_REQUEST, nil, "Forbidden: /metrics is served to loopback peers only (transports.http.metrics_role)")
			return
		}
		res := s.auth.Load().identify(r)
		if !res.ok || r.Header.Get("Authorization") == "" {
			// No token (the anonymous role included): the same 401 as /mcp.
			ref.Code, ref.Kind, ref.Reason = string(violation.Unauthenticated), res.kind, "GET /metrics refused: no valid bearer token"
			if res.challenge != "" {
				w.Header().Set("WWW-Authenticate", res.challenge)
			}
			s.refuseEdge(w, ref, http.StatusUnauthorized, mcp.INVALID_REQUEST, nil, "Unauthorized: a bearer token of transports.http.metrics_role is required")
			return
		}
		edge.ConnFrom(r.Context()).MarkAuthenticated()
		if res.id.Role != role {
			ref.Code, ref.Principal, ref.Role, ref.ClientID = string(violation.InsufficientScope), res.id.Principal, res.id.Role, res.id.ClientID
			ref.Reason = "GET /metrics refused: role " + res.id.Role + " is not transports.http.metrics_role"
			s.refuseEdge(w, ref, http.StatusForbidden, mcp.INVALID_REQUEST, nil, "Forbidden: this token's role may not read /metrics")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// opsPreamble is the Origin check and the method check the operator
// endpoints share; false means it has answered.
func (s *Server) opsPreamble(w http.ResponseWriter, r *http.Request) bool {
	if !s.origins.Load().Allowed(r.Header.Get("Origin")) {
		ref := edge.Refusal{Transport: transportOps, Remote: edge.RemoteHost(r.RemoteAddr), Principal: "anonymous",
			Code: string(violation.OriginRefused), Reason: r.Method + " " + r.URL.Path + " refused: Origin not on transports.http.allowed_origins"}
		s.refuseEdge(w, ref, http.StatusForbidden, mcp.INVALID_REQUEST, nil, "Forbidden: this Origin may not reach Airlock (transports.http.allowed_origins)")
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		plain(w, http.StatusMethodNotAllowed, "method not allowed\n")
		return false
	}
	return true
}

func plain(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}
