package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkEdgeRefuseUnauthenticated is the server's CPU for one request
// without a token (the 401 path: origin check, token check, aggregated
// audit, JSON-RPC error body) — what a flood costs per request.
func BenchmarkEdgeRefuseUnauthenticated(b *testing.B) {
	f := newFixture(b, "local")
	h := f.srv.Handler()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, PathStreamable, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.RemoteAddr = "10.9.9.9:1234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusUnauthorized {
			b.Fatal(w.Code)
		}
	}
}
