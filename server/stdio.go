package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/airlock-dev/airlock/internal/edge/edge"
	"github.com/airlock-dev/airlock/internal/edge/wire"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// ServeStdio serves one client over in/out until ctx ends or in closes.
// Stdout carries only the protocol; diagnostics, the MCP library's
// included, go to the logger (so --log-format json stays JSON).
//
// Every line from in crosses the same checks as an HTTP body before mcp-go
// reads it: at most max_message_bytes (a longer line is skipped as it
// streams by, never held whole, so one 50 MB message costs no memory and
// does not stall the messages after it), and one strict JSON-RPC message
// (wire.Check). A refused line is answered with a bounded JSON-RPC error
// that never echoes it, and audited (aggregated like HTTP refusals).
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	stdio := mcpserver.NewStdioServer(s.mcp)
	stdio.SetErrorLogger(slog.NewLogLogger(s.log.With("transport", "stdio").Handler(), slog.LevelError))
	w := &lineWriter{w: out, blobs: blobSplicer{buffered: true}}
	// A page's blob goes from the page to the pipe past mcp-go's encoder
	// (stdioblob.go): the forwarder finds the splicer in the call's context.
	ctx = withSplicer(ctx, &w.blobs)
	// mcp-go reads the filter's output directly: no pipe and no goroutine
	// between them, one hand-off less on every message (issue 27).
	return stdio.Listen(ctx, &stdioFilter{s: s, br: bufio.NewReaderSize(in, stdioChunk), out: w}, w)
}

// lineWriter serialises whole messages from mcp-go and from the filter:
// each Write is one message, written under the lock, with the blobs whose
// placeholders it carries spliced in.
type lineWriter struct {
	mu    sync.Mutex
	w     io.Writer
	blobs blobSplicer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.blobs.writeSpliced(l.w, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// stdioChunk is how much of a line is read at a time.
const stdioChunk = 64 << 10

// stdioFilter is what mcp-go reads: the accepted lines of br, each with
// its newline; it answers refused ones itself, on out. It ends (io.EOF)
// where br does.
type stdioFilter struct {
	s       *Server
	br      *bufio.Reader
	out     io.Writer
	line    []byte // the line being gathered
	pending []byte // what of the last accepted line mcp-go has not read
	eof     bool
}

func (f *stdioFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.eof {
			return 0, io.EOF
		}
		if err := f.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// next reads one line of br: an accepted one becomes pending, a refused
// one is answered. At EOF it sets eof (a last line without a newline is
// still served).
func (f *stdioFilter) next() error {
	max := f.s.r.Config().Transports.Stdio.MaxMessageBytes
	f.line = f.line[:0]
	oversize := false
	for {
		chunk, err := f.br.ReadSlice('\n')
		if !oversize {
			if int64(len(f.line)+len(chunk)) > max+1 { // +1: the newline
				oversize, f.line = true, f.line[:0]
			} else {
				f.line = append(f.line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the same line goes on
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		f.eof = err != nil
		break
	}
	if oversize {
		f.s.refuseStdio(f.out, nil, violation.MessageTooLarge, "", wire.CodeInvalidRequest,
			fmt.Sprintf("Invalid request: the message is over transports.stdio.max_message_bytes (%d bytes); it was discarded unread", max))
		return nil
	}
	msg := bytes.TrimSpace(f.line)
	if len(msg) == 0 {
		return nil
	}
	if _, cerr := wire.Check(msg); cerr != nil {
		var we *wire.Error
		errors.As(cerr, &we)
		f.s.refuseStdio(f.out, we.ID, violation.MalformedMessage, we.Err.Error(), we.Code, we.Message)
		return nil
	}
	// msg is a slice of line, which the next line reuses: mcp-go has read
	// all of pending by then (Read gathers the next line only once it has).
	f.pending = append(msg, '\n')
	return nil
}

func (s *Server) refuseStdio(out io.Writer, id json.RawMessage, code violation.Code, kind string, rpcCode int, message string) {
	idn := s.identityFrom(context.Background())
	s.refusals.Refuse(edge.Refusal{Transport: "stdio", Remote: "stdio", Principal: idn.Principal, Role: idn.Role,
		Code: string(code), Kind: kind, Reason: "stdin message refused: " + message})
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": rpcCode, "message": message, "data": map[string]any{"code": code}}})
	_, _ = out.Write(append(b, '\n'))
}
