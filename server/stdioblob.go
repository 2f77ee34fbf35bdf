package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
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

// blobSplicer holds the pages whose answers carry placeholders. It belongs
// to one stdio connection's lineWriter.
type blobSplicer struct {
	mu      sync.Mutex
	pending map[string][]byte // token → page bytes
	// bw is the buffer a spliced message is written through, kept between
	// messages; only writeSpliced uses it, under lineWriter's lock.
	bw *bufio.Writer
}

// placeholder registers data and returns the token that stands for its
// base64 in the answer; ok is false when too many pages are pending (the
// caller encodes inline).
func (b *blobSplicer) placeholder(data []byte) (token string, ok bool) {
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
		b.pending = map[string][]byte{}
	}
	b.pending[token] = data
	return token, true
}

// take finds the first pending token in msg and removes it: its offset in
// msg and its page; at < 0 when msg holds none.
func (b *blobSplicer) take(msg []byte) (at int, token string, data []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.pending) == 0 {
		return -1, "", nil
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
	return -1, "", nil
}

// writeSpliced writes msg to w with every pending token in it replaced by
// its page's base64, streamed through one buffer. Its caller serialises
// calls (lineWriter's lock) and always passes the same w.
func (b *blobSplicer) writeSpliced(w io.Writer, msg []byte) error {
	at, token, data := b.take(msg)
	if at < 0 {
		_, err := w.Write(msg)
		return err
	}
	if b.bw == nil {
		b.bw = bufio.NewWriterSize(w, 64<<10)
	}
	bw := b.bw
	defer bw.Reset(w) // a failed write leaves no error or bytes for the next message
	for at >= 0 {
		bw.Write(msg[:at]) //nolint:errcheck // bufio keeps the first error; Flush returns it
		enc := base64.NewEncoder(base64.StdEncoding, bw)
		enc.Write(data) //nolint:errcheck
		enc.Close()     //nolint:errcheck
		msg = msg[at+len(token):]
		at, token, data = b.take(msg)
	}
	bw.Write(msg) //nolint:errcheck
	return bw.Flush()
}

// splicerKey is where ServeStdio leaves its connection's splicer for the
// tool forwarder.
type splicerKey struct{}

func withSplicer(ctx context.Context, b *blobSplicer) context.Context {
	return context.WithValue(ctx, splicerKey{}, b)
}

// splicerFrom is the stdio connection's splicer; nil on other transports.
func splicerFrom(ctx context.Context) *blobSplicer {
	b, _ := ctx.Value(splicerKey{}).(*blobSplicer)
	return b
}
