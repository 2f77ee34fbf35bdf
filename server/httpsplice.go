package server

import (
	"net/http"
)

// spliceWriter is a streamable HTTP POST's response writer: it carries the
// request's splicer, so the answer's long text and pages are written once,
// as mcp-go writes the message, instead of escaped, compacted and copied
// by its encoder (stdioblob.go; issue 27). A POST's answer is written to
// that POST's response — as JSON, or as an event on the stream it was
// upgraded to — and nowhere else: no event store is configured, so nothing
// replays it on another request. The SSE transport answers on its GET
// stream, so its requests carry no splicer and their answers no
// placeholders (TestHTTPTextSpliced).
type spliceWriter struct {
	http.ResponseWriter
	b blobSplicer
}

func (w *spliceWriter) Write(p []byte) (int, error) {
	if err := w.b.writeSpliced(w.ResponseWriter, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush keeps the response streamable (mcp-go upgrades a POST to SSE only
// on a writer that flushes).
func (w *spliceWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (mcp-go sets
// write deadlines through it).
func (w *spliceWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
