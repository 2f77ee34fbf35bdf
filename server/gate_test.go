package server

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/edge/wire"
)

// TestBodyOverLimitIs413: a body over transports.http.max_body_bytes is
// refused with 413 before any JSON is parsed, not echoed as a parse error.
func TestBodyOverLimitIs413(t *testing.T) {
	f, ts := httpFixture(t)
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_pools","arguments":{"pad":"` +
		strings.Repeat("x", int(f.cfg.Transports.HTTP.MaxBodyBytes)) + `"}}}`
	res, _ := roundTrip(t, mcpRequest(t, http.MethodPost, ts.URL, bytes.NewReader([]byte(big)), "Bearer "+testToken))
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("status %d, want 413", res.StatusCode)
	}
}

// FuzzPeek: whatever a client posts, the gate's look at it never panics,
// and a body naming 2026-07-28 in _meta is always seen as such (else a
// modern request could be pushed onto the session path or the reverse).
func FuzzPeek(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{"elicitation":{}}}}`))
	f.Add([]byte(`{"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	f.Add([]byte(`[{"method":"ping"}]`))
	f.Add([]byte(`{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := wire.Check(body) // what the gate routes by
		if err != nil {
			return
		}
		if p.MetaVersion != "" && !bytes.Contains(body, []byte("protocolVersion")) {
			t.Fatalf("version %q from a body without one", p.MetaVersion)
		}
		if p.Elicitation && !bytes.Contains(body, []byte("elicitation")) {
			t.Fatal("elicitation from a body without it")
		}
	})
}
