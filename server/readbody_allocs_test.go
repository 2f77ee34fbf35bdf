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
//
// The allocations are counted on the check alone, not on readBody: the
// runtime's count is the whole process's, and under -race on a loaded
// machine the other tests' servers allocated during a readBody-sized
// measurement often enough to make "two fewer" fail now and then (a
// fresh-clone run with -count=2 under load). A run of the check takes well
// under a microsecond, and AllocsPerRun divides by the runs, so a stray
// allocation elsewhere cannot reach a whole one.
func TestReadBodyPlainJSONSkipsTheMediaTypeParse(t *testing.T) {
	f := newFixture(t, "local")
	cfg := f.cfg.Transports.HTTP
	const msg = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for ct, want := range map[string]int{"application/json": 0, "Application/JSON; charset=utf-8": 0,
		"text/plain": http.StatusUnsupportedMediaType, "application/json;;": http.StatusUnsupportedMediaType} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(msg))
		r.Header.Set("Content-Type", ct)
		if _, got, _, _ := readBody(httptest.NewRecorder(), r, cfg, "application/json"); got != want {
			t.Errorf("Content-Type %q: status %d, want %d", ct, got, want)
		}
	}
	const runs = 1000
	if n := testing.AllocsPerRun(runs, func() { acceptsMediaType("application/json", "application/json") }); n != 0 {
		t.Errorf("plain application/json: %v allocations per check, want 0 (no parse)", n)
	}
	// The parse's parameter map and value: the measurement above would see
	// a parse if the plain type took one.
	if n := testing.AllocsPerRun(runs, func() { acceptsMediaType("application/json; charset=utf-8", "application/json") }); n < 1 {
		t.Errorf("application/json with a parameter: %v allocations per check, want the parse's (at least 1)", n)
	}
}
