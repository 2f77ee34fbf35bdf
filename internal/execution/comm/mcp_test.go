package comm

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// fakeUpstream is an MCP server on the other end of two pipes that answers
// initialize properly and every other request with answer(method).
func fakeUpstream(t testing.TB, answer func(method string) string) (io.Reader, io.WriteCloser) {
	t.Helper()
	inR, inW := io.Pipe()   // server → client
	outR, outW := io.Pipe() // client → server
	go func() {
		defer inW.Close()
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var req struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(sc.Bytes(), &req) != nil || len(req.ID) == 0 {
				continue
			}
			res := `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`
			if req.Method != "initialize" {
				res = answer(req.Method)
			}
			line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, res)
			if strings.HasPrefix(res, "ERROR:") {
				line = fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32000,"message":%q}}`+"\n", req.ID, strings.TrimPrefix(res, "ERROR:"))
			}
			if _, err := io.WriteString(inW, line); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { outR.Close(); inR.Close() })
	return inR, outW
}

// TestMCPSession: listing keeps schemas exactly as sent; a tool error and a
// JSON-RPC error come back as untrusted text (IsError); a duplicate key in
// an answer and an answer past the byte cap are typed refusals.
func TestMCPSession(t *testing.T) {
	list := `{"tools":[{"name":"echo","description":"Echoes.","inputSchema":{"type":"object","properties":{"m":{"type":"string"}}}}]}`
	for _, tc := range []struct {
		name, list, call string
		max              int64
		wantText         string
		wantErr          error
		isError          bool
	}{
		{"ok", list, `{"content":[{"type":"text","text":"hi"},{"type":"image","data":"AA==","mimeType":"image/png"}]}`, 1 << 20, "hi", nil, false},
		{"tool error", list, `{"content":[{"type":"text","text":"boom"}],"isError":true}`, 1 << 20, "boom", nil, true},
		{"rpc error", list, `ERROR:upstream says no`, 1 << 20, "upstream says no", nil, true},
		{"structured only", list, `{"content":[],"structuredContent":{"t":1}}`, 1 << 20, `{"t":1}`, nil, false},
		{"duplicate key", list, `{"content":[],"content":[{"type":"text","text":"x"}]}`, 1 << 20, "", ErrMCPUnavailable, false},
		{"over the cap", list, `{"content":[{"type":"text","text":"` + strings.Repeat("x", 4096) + `"}]}`, 2048, "", ErrMCPTooLarge, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, out := fakeUpstream(t, func(method string) string {
				if method == "tools/list" {
					return tc.list
				}
				return tc.call
			})
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s, err := DialMCP(ctx, MCPConn{In: in, Out: out, MaxBytes: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			tools, err := s.ListTools(ctx)
			if err != nil || len(tools) != 1 || string(tools[0].InputSchema) != `{"type":"object","properties":{"m":{"type":"string"}}}` {
				t.Fatalf("list: %+v %v", tools, err)
			}
			res, err := s.CallTool(ctx, "echo", json.RawMessage(`{"m":"x"}`))
			if tc.wantErr != nil {
				var me *MCPError
				if !errors.Is(err, tc.wantErr) || !errors.As(err, &me) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || res.Text != tc.wantText || res.IsError != tc.isError {
				t.Fatalf("call: %+v %v", res, err)
			}
		})
	}
}

// FuzzMCPAnswers: whatever an upstream answers to tools/list and
// tools/call, the client neither panics nor returns an untyped error.
func FuzzMCPAnswers(f *testing.F) {
	f.Add(`{"tools":[{"name":"echo","description":"d","inputSchema":{"type":"object"}}]}`, `{"content":[{"type":"text","text":"hi"}]}`)
	f.Add(`{"tools":[],"nextCursor":"again"}`, `{"content":[{"type":"resource","resource":{"uri":"x","text":"t"}}],"isError":true}`)
	f.Add(`{"tools":[{"name":1}]}`, `{"content":"no"}`)
	f.Add(`{"a":1,"a":2}`, `null`)
	f.Fuzz(func(t *testing.T, list, call string) {
		if !json.Valid([]byte(list)) || !json.Valid([]byte(call)) || strings.ContainsAny(list+call, "\n\r") {
			return // a broken line is the transport's, not this parser's
		}
		in, out := fakeUpstream(t, func(method string) string {
			if method == "tools/list" {
				return list
			}
			return call
		})
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := DialMCP(ctx, MCPConn{In: in, Out: out, MaxBytes: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		var me *MCPError
		if _, err := s.ListTools(ctx); err != nil && !errors.As(err, &me) {
			t.Fatalf("list: untyped %v", err)
		}
		if _, err := s.CallTool(ctx, "echo", json.RawMessage(`{}`)); err != nil && !errors.As(err, &me) {
			t.Fatalf("call: untyped %v", err)
		}
	})
}
