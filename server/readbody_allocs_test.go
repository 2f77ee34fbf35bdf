package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadBodyPlainJSONSkipsTheMediaTypeParse: a POST whose Content-Type is
// exactly application/json (what MCP clients send) is taken without
// mime.ParseMediaType, which builds a parameter map per request (issue 27:
// garbage per call); one with parameters or another case is still parsed,
// and anything else is still refused.
func TestReadBodyPlainJSONSkipsTheMediaTypeParse(t *testing.T) {
	f := newFixture(t, "local")
	cfg := f.cfg.Transports.HTTP
	const msg = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	read := func(ct string) int {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(msg))
		r.Header.Set("Content-Type", ct)
		_, status, _, _ := readBody(httptest.NewRecorder(), r, cfg, "application/json")
		return status
	}
	for ct, want := range map[string]int{"application/json": 0, "Application/JSON; charset=utf-8": 0,
		"text/plain": http.StatusUnsupportedMediaType, "application/json;;": http.StatusUnsupportedMediaType} {
		if got := read(ct); got != want {
			t.Errorf("Content-Type %q: status %d, want %d", ct, got, want)
		}
	}
	plain := testing.AllocsPerRun(50, func() { read("application/json") })
	params := testing.AllocsPerRun(50, func() { read("application/json; charset=utf-8") })
	// A parse costs at least its parameter map and the parameter's value:
	// the plain type must come in two or more allocations under that
	// (before the cut: 27 against 28).
	if plain > params-2 {
		t.Errorf("plain application/json: %v allocations, with a parameter %v: want at least 2 fewer (no parse)", plain, params)
	}
}
