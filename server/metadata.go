package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/edge/oauth"
)

// protectedResourceMetadata serves RFC 9728 metadata at
// /.well-known/oauth-protected-resource and its path-suffixed form for the
// configured resource (/.well-known/oauth-protected-resource/mcp), without
// authentication: it is where a spec-following MCP client starts after a
// 401. The document comes from the configuration current at the request
// (a reload may add, change or remove it); without transports.http.oauth,
// or on any other path, it is 404.
func (s *Server) protectedResourceMetadata() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := s.auth.Load()
		if a.oauthCfg == nil || !slices.Contains(oauth.MetadataPaths(a.oauthCfg.Resource), strings.TrimSuffix(r.URL.EscapedPath(), "/")) {
			http.NotFound(w, r)
			return
		}
		// Public, non-credentialed document: any origin may read it, as
		// browser-based MCP clients must.
		w.Header().Set("Access-Control-Allow-Origin", "*")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodOptions:
			w.Header().Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
			w.WriteHeader(http.StatusNoContent)
			return
		default:
			w.Header().Set("Allow", "GET, HEAD, OPTIONS")
			http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		_ = json.NewEncoder(w).Encode(oauth.NewMetadata(a.oauthCfg))
	})
}
