package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"sync"
)

// Blob bytes written around mcp-go's encoder, on stdio (issue 27).
//
// A page of a binary file is almost all of its answer. Left to mcp-go, the
// page is base64-encoded into a string, escaped into CallToolResult's JSON,
// that JSON validated and compacted again by the outer json.Marshal (it is a
// Marshaler's output), and copied once more by Fprintf: four passes over
// 4/3 of the page and four buffers of that size for the collector. On stdio
// the answer carries a placeholder instead — a random token — and
// lineWriter, which writes every message whole under its lock, writes the
// page's base64 in its place, from the page's bytes straight into the pipe:
// one pass, no buffer the size of the page.
//
// A long text answer (a page of a text file, issue 27) is spliced the same
// way: left to mcp-go it is escaped into CallToolResult's JSON, then
// validated and compacted by the outer json.Marshal and copied by Fprintf —
// three passes over the text, three buffers of its size. Spliced, it is
// escaped once, as encoding/json escapes a string (HTML characters, U+2028
// and U+2029, invalid UTF-8 as U+FFFD), straight into the pipe.
//
// What the client receives is byte for byte what mcp-go would have written
// (TestStdioBlobSpliceMatchesMarshal). Nothing else changes: the runner has
// finished — audit record committed, content labelled — before mcp-go
// marshals the answer, as before. A token cannot be forged or leaked: it is
// 128 random bits, new for each blob, and is replaced in the one message
// that carries it, so it never reaches the client; only tokens registered
// and not yet written are replaced, so content that spells a token passes
// verbatim (TestStdioBlobTokenInContentVerbatim).

// blobTokenPrefix marks a placeholder; 32 hex digits follow. Both are
// characters JSON never escapes, so the token appears in the marshalled
// message exactly as generated.
const blobTokenPrefix = "airlock-blob:"

// maxPendingBlobs bounds the pages waiting for their answer to be written.
// An answer mcp-go never writes (a write that failed; the connection gone)
// would leave its page here: past the bound a page is encoded inline as
// before, so a leak costs at most this many pages, never correctness.
const maxPendingBlobs = 16

// minSplicedText is the shortest text that takes a placeholder: below it
// the token's bookkeeping costs about what it saves.
const minSplicedText = 1 << 10

// spliced is what a placeholder stands for: a page, written as its base64,
// or a text, written as the inside of a JSON string.
type spliced struct {
	page   []byte
	text   string
	isText bool
}

// blobSplicer holds the pages and texts whose answers carry placeholders.
// It belongs to one stdio connection's lineWriter.
type blobSplicer struct {
	mu      sync.Mutex
	pending map[string]spliced // token → what it stands for
	// buffered: a spliced message is written through bw, kept between
	// messages (stdio); only writeSpliced uses it, under lineWriter's lock.
	buffered bool
	bw       *bufio.Writer
}

// placeholder registers data and returns the token that stands for its
// base64 in the answer; ok is false when too many pages are pending (the
// caller encodes inline).
func (b *blobSplicer) placeholder(data []byte) (token string, ok bool) {
	return b.register(spliced{page: data})
}

// textPlaceholder registers text and returns the token that stands for it
// inside its JSON string; ok is false when the text is short or too many
// are pending (the caller writes the text inline).
func (b *blobSplicer) textPlaceholder(text string) (token string, ok bool) {
	if len(text) < minSplicedText {
		return "", false
	}
	return b.register(spliced{text: text, isText: true})
}

func (b *blobSplicer) register(v spliced) (token string, ok bool) {
	if b == nil {
		return "", false
	}
	var r [16]byte
	_, _ = rand.Read(r[:]) // never fails (crypto/rand)
	token = blobTokenPrefix + hex.EncodeToString(r[:])
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) >= maxPendingBlobs {
		return "", false
	}
	if b.pending == nil {
		b.pending = map[string]spliced{}
	}
	b.pending[token] = v
	return token, true
}

// take finds the first pending token in msg and removes it: its offset in
// msg and what it stands for; at < 0 when msg holds none.
func (b *blobSplicer) take(msg []byte) (at int, token string, data spliced) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) == 0 {
		return -1, "", data
	}
	at = -1
	for i := bytes.Index(msg, []byte(blobTokenPrefix)); i >= 0; {
		end := i + len(blobTokenPrefix) + 32
		if end <= len(msg) {
			if d, ok := b.pending[string(msg[i:end])]; ok {
				token, data, at = string(msg[i:end]), d, i
				delete(b.pending, token)
				return at, token, data
			}
		}
		next := bytes.Index(msg[i+1:], []byte(blobTokenPrefix))
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return -1, "", data
}

// writeSpliced writes msg to w with every pending token in it replaced by
// its page's base64 or its text's JSON escape. Its caller serialises calls
// (lineWriter's lock; mcp-go's per response on HTTP) and always passes the
// same w. On stdio the pieces go through one buffer kept between messages
// (a pipe write is a system call); over HTTP, net/http buffers them.
func (b *blobSplicer) writeSpliced(w io.Writer, msg []byte) error {
	at, token, data := b.take(msg)
	if at < 0 {
		_, err := w.Write(msg)
		return err
	}
	out := &stickyErr{w: w}
	if b.buffered {
		if b.bw == nil {
			b.bw = bufio.NewWriterSize(w, 64<<10)
		}
		defer b.bw.Reset(w) // a failed write leaves no error or bytes for the next message
		out.w = b.bw
	}
	for at >= 0 {
		out.Write(msg[:at]) //nolint:errcheck // out keeps the first error
		if data.isText {
			writeJSONStringBody(out, data.text)
		} else {
			enc := base64.NewEncoder(base64.StdEncoding, out)
			enc.Write(data.page) //nolint:errcheck
			enc.Close()          //nolint:errcheck
		}
		msg = msg[at+len(token):]
		at, token, data = b.take(msg)
	}
	out.Write(msg) //nolint:errcheck
	if out.err == nil && b.buffered {
		out.err = b.bw.Flush()
	}
	return out.err
}

// stickyErr writes to w until a write fails, then keeps that error.
type stickyErr struct {
	w   io.Writer
	err error
}

func (s *stickyErr) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}

// splicerKey is where ServeStdio leaves its connection's splicer, and the
// session gate a streamable HTTP request's, for the tool forwarder.
type splicerKey struct{}

func withSplicer(ctx context.Context, b *blobSplicer) context.Context {
	return context.WithValue(ctx, splicerKey{}, b)
}

// splicerFrom is the stdio connection's or the streamable HTTP request's
// splicer; nil elsewhere (the SSE transport answers on another request).
func splicerFrom(ctx context.Context) *blobSplicer {
	b, _ := ctx.Value(splicerKey{}).(*blobSplicer)
	return b
}

// writeJSONStringBody writes s as encoding/json writes a string, without
// its quotes: json.Marshal's own escaping, so the spliced line cannot
// differ from mcp-go's (TestStdioTextSpliceMatchesMarshal).
func writeJSONStringBody(w io.Writer, s string) {
	q, _ := json.Marshal(s)  // a string always marshals
	w.Write(q[1 : len(q)-1]) //nolint:errcheck // writeSpliced's writer keeps the first error
}
