package server

import (
	"net/http"
	"strings"

	"github.com/airlock-dev/airlock/internal/edge/oauth"
	"github.com/airlock-dev/airlock/internal/operator/console"
)

// handleIndex answers every path nothing else serves: GET / says what this
// server is and where its endpoints are, and any other path (a client
// pointed at /mcp/ or at the bare address) gets 404 with the same pointers
// instead of Go's bare "404 page not found", which left a person guessing
// (TestIndexSaysWhereTheEndpointIs). It is static text: no configuration
// value but which endpoints are on, no version, nothing read or changed.
func (s *Server) handleIndex(mux *http.ServeMux) {
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			if !s.opsPreamble(w, r) { // the probes' Origin check
				return
			}
			if r.URL.Path == "/" {
				plain(w, http.StatusOK, s.indexText())
				return
			}
		}
		plain(w, http.StatusNotFound, "404: nothing is served at this path.\n\n"+s.indexText())
	})
}

// indexText names the endpoints that are on.
func (s *Server) indexText() string {
	cfg := s.r.Config().Transports.HTTP
	var b strings.Builder
	b.WriteString("Airlock: an MCP server between an AI agent and the world; every tool call is checked, fenced and audited.\n\n")
	b.WriteString("MCP endpoint (streamable HTTP, protocol 2025-11-25 and 2026-07-28): " + PathStreamable + "\n")
	b.WriteString("  POST one JSON-RPC message as application/json")
	switch {
	case cfg.AnonymousRole != "" && cfg.OAuth == nil:
		b.WriteString(".\n")
	case cfg.OAuth != nil:
		b.WriteString(", with Authorization: Bearer <OAuth access token> (discovery: " + oauth.WellKnownPath + ").\n")
	default:
		b.WriteString(", with Authorization: Bearer <a role's token>.\n")
	}
	b.WriteString("Legacy SSE transport: " + PathSSE + " (messages to " + PathMessage + ").\n")
	if cfg.ConsoleRole != "" {
		b.WriteString("Operator's web console: " + console.Path + "/\n")
	}
	b.WriteString("Health: " + PathHealthz + ", " + PathReadyz + "\n")
	return b.String()
}
