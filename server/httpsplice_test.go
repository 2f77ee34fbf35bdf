package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/testkit/testpool"
)

// longText is a text page worth splicing: JSON's special characters,
// HTML, a line separator, multi-byte characters.
var longText = strings.Repeat("region \"north\" <b>&amp;</b>\tgrüße 日本\u2028 \\ 🙂\n", 40)

// TestHTTPTextSpliced: a long text answer reaches every transport's real
// client exactly as an answer made without placeholders — streamable HTTP
// (the JSON answer and the raw 2026-07-28 one), the SSE transport (which
// answers on its GET stream and so takes none) and stdio — and no
// placeholder is ever left in what a client receives.
func TestHTTPTextSpliced(t *testing.T) {
	setTokens(t)
	f := newFixture(t, "local")
	testpool.WriteFile(t, filepath.Join(f.dir, "pools", "alpha"), "long.txt", longText)
	appendManifest(t, filepath.Join(f.dir, "pools", "alpha"), "long.txt", longText)
	f = f.withRunner(t, runner.Options{}, nil) // loads the manifest with long.txt
	w := &web{fixture: f, ts: httptest.NewServer(f.srv.Handler())}
	t.Cleanup(w.ts.Close)
	read := map[string]any{"pool": "alpha", "path": "long.txt"}

	want := text(callOK(t, f.connect(t), "read_pool_file", read)) // in process: no splicer
	if !strings.Contains(want, longText) {
		t.Fatalf("the reference answer lacks the file: %.200q", want)
	}
	for name, got := range map[string]string{
		"streamable":   text(callOK(t, w.legacyClient(t, "agent", nil), "read_pool_file", read)),
		"2026-07-28":   text(w.modernCall(t, "agent", map[string]string{"Mcp-Param-Pool": "alpha"}, false, "read_pool_file", read, nil).result(t)),
		"sse":          text(callOK(t, sseBearerClient(t, w.ts.URL, testToken), "read_pool_file", read)),
		"stdio":        text(callOK(t, stdioPipeClient(t, f), "read_pool_file", read)),
		"in-process 2": text(callOK(t, f.connect(t), "read_pool_file", read)),
	} {
		if got != want {
			t.Errorf("%s: the text differs from the reference (%d vs %d bytes): %.200q", name, len(got), len(want), got)
		}
	}
	if r := w.modernCall(t, "agent", map[string]string{"Mcp-Param-Pool": "alpha"}, false, "read_pool_file", read, nil); strings.Contains(r.body, blobTokenPrefix) {
		t.Fatalf("a placeholder reached the client: %.300s", r.body)
	}
}

// TestSpliceWriterMatchesInline: through a streamable POST's writer the
// message with placeholders becomes byte for byte the inline one, the
// writer still flushes (a POST can be upgraded to SSE) and unwraps to the
// connection's writer.
func TestSpliceWriterMatchesInline(t *testing.T) {
	resp := &runner.Response{Text: longText}
	want := marshalLine(t, toResult(nil, resp))
	rec := httptest.NewRecorder()
	sw := &spliceWriter{ResponseWriter: rec}
	line := marshalLine(t, toResult(&sw.b, resp))
	if len(line) >= len(want) {
		t.Fatal("the text was not replaced by a placeholder")
	}
	if n, err := sw.Write(line); err != nil || n != len(line) {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if !bytes.Equal(rec.Body.Bytes(), want) {
		t.Fatalf("spliced body differs from the inline one: %.300s", rec.Body.Bytes())
	}
	var _ http.Flusher = sw
	sw.Flush()
	if !rec.Flushed {
		t.Error("Flush did not reach the connection's writer")
	}
	if sw.Unwrap() != rec {
		t.Error("Unwrap does not return the connection's writer")
	}
}
