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
	w := &lineWriter{w: out}
	pr, pw := io.Pipe()
	go func() {
		err := s.filterStdio(in, pw, w)
		_ = pw.CloseWithError(err)
	}()
	err := stdio.Listen(ctx, pr, w)
	_ = pr.Close()
	return err
}

// lineWriter serialises whole messages from mcp-go and from the filter:
// each Write is one message, written under the lock.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// stdioChunk is how much of a line is read at a time.
const stdioChunk = 64 << 10

// filterStdio copies accepted lines from in to mcp-go and answers refused
// ones itself. It returns nil at EOF.
func (s *Server) filterStdio(in io.Reader, toMCP io.Writer, out io.Writer) error {
	max := s.r.Config().Transports.Stdio.MaxMessageBytes
	br := bufio.NewReaderSize(in, stdioChunk)
	var line []byte
	oversize := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !oversize {
			if int64(len(line)+len(chunk)) > max+1 { // +1: the newline
				oversize, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the same line goes on
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if oversize {
			s.refuseStdio(out, nil, violation.MessageTooLarge, "", wire.CodeInvalidRequest,
				fmt.Sprintf("Invalid request: the message is over transports.stdio.max_message_bytes (%d bytes); it was discarded unread", max))
		} else if msg := bytes.TrimSpace(line); len(msg) > 0 {
			if _, cerr := wire.Check(msg); cerr != nil {
				var we *wire.Error
				errors.As(cerr, &we)
				s.refuseStdio(out, we.ID, violation.MalformedMessage, we.Err.Error(), we.Code, we.Message)
			} else if _, werr := toMCP.Write(append(msg, '\n')); werr != nil {
				return werr
			}
		}
		if err != nil { // EOF
			return nil
		}
		line, oversize = line[:0], false
	}
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
