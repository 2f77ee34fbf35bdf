package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// stdioPeer drives ServeStdio over pipes with raw lines.
type stdioPeer struct {
	in  *io.PipeWriter
	out *bufio.Reader
}

func startStdio(t *testing.T, f *fixture) *stdioPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = f.srv.ServeStdio(ctx, inR, outW); outW.Close(); close(done) }()
	t.Cleanup(func() { inW.Close(); cancel(); <-done })
	return &stdioPeer{in: inW, out: bufio.NewReaderSize(outR, 1<<20)}
}

// startStdioInitialized is startStdio past the initialize handshake.
func startStdioInitialized(t *testing.T, f *fixture) *stdioPeer {
	t.Helper()
	p := startStdio(t, f)
	p.send(t, initBody)
	if r := p.reply(t, time.Minute); !strings.Contains(r, `"result"`) {
		t.Fatalf("initialize: %s", r)
	}
	return p
}

func (p *stdioPeer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// reply reads one message, failing if none comes within d (a hang guard).
func (p *stdioPeer) reply(t *testing.T, d time.Duration) string {
	t.Helper()
	got := make(chan string, 1)
	go func() { l, _ := p.out.ReadString('\n'); got <- l }()
	select {
	case l := <-got:
		return l
	case <-time.After(d):
		t.Fatal("no reply")
		return ""
	}
}

func TestStdioSurvivesAHugeMessage(t *testing.T) {
	f := newFixture(t, "local")
	p := startStdioInitialized(t, f)
	// A 50 MB method name: refused without being echoed or held whole.
	huge := `{"jsonrpc":"2.0","id":2,"method":"` + strings.Repeat("m", 50<<20) + `"}`
	start := time.Now()
	go func() { _, _ = io.WriteString(p.in, huge+"\n") }()
	r := p.reply(t, time.Minute)
	if len(r) > 512 || !strings.Contains(r, string(violation.MessageTooLarge)) {
		t.Fatalf("huge message answered with %d bytes: %.200s", len(r), r)
	}
	p.send(t, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if r := p.reply(t, time.Minute); !strings.Contains(r, `"id":3`) || !strings.Contains(r, `"result"`) {
		t.Fatalf("ping after the huge message: %s", r)
	}
	t.Logf("50 MB message refused and the next answered in %v", time.Since(start))
	if _, total := f.edgeRefusals(t, violation.MessageTooLarge); total != 1 {
		t.Fatalf("MESSAGE_TOO_LARGE counted %d", total)
	}
}

func TestStdioRefusesMalformedMessages(t *testing.T) {
	f := newFixture(t, "local")
	p := startStdioInitialized(t, f)
	for _, line := range []string{
		`not json at all`,
		"\x00\x01\xff",
		`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"list_pools","name":"run_pipeline","arguments":{"pipeline":"count_rows"}}}`,
		`[{"jsonrpc":"2.0","id":6,"method":"ping"}]`,
		strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
	} {
		p.send(t, line)
		r := p.reply(t, time.Minute)
		var msg struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(r), &msg); err != nil || msg.Error.Code == 0 {
			t.Fatalf("%.40q: not a JSON-RPC error: %s", line, r)
		}
		if strings.Contains(r, "Go struct") || strings.Contains(r, "not json") || len(r) > 512 {
			t.Fatalf("%.40q: answer leaks or echoes: %s", line, r)
		}
	}
	if _, total := f.edgeRefusals(t, violation.MalformedMessage); total != 6 {
		t.Fatalf("MALFORMED_MESSAGE counted %d, want 6", total)
	}
	for _, r := range f.auditRecords(t) {
		if r.Tool == "run_pipeline" {
			t.Fatal("the duplicate-name call ran run_pipeline")
		}
	}
	// Still serving.
	p.send(t, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"list_pools","arguments":{}}}`)
	if r := p.reply(t, time.Minute); !strings.Contains(r, "alpha") {
		t.Fatalf("list_pools after the refusals: %.300s", r)
	}
}

// TestUnknownToolIsAProtocolError: as the MCP spec prescribes, an unknown
// tool name is a JSON-RPC -32602 error (not a tool result), and the audit
// trail records it as UNKNOWN_TOOL; the README says the same.
func TestUnknownToolIsAProtocolError(t *testing.T) {
	f := newFixture(t, "local")
	p := startStdioInitialized(t, f)
	p.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"delete_everything","arguments":{}}}`)
	r := p.reply(t, time.Minute)
	if !strings.Contains(r, `"code":-32602`) || strings.Contains(r, `"isError"`) {
		t.Fatalf("unknown tool answered %s", r)
	}
	found := false
	for _, rec := range f.auditRecords(t) {
		found = found || (rec.Tool == "delete_everything" && rec.Violation == string(violation.UnknownTool))
	}
	if !found {
		t.Fatal("unknown tool not audited as UNKNOWN_TOOL")
	}
}
