package upstream

import (
	"context"
	"database/sql"
	"io"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/comm"
	"github.com/airlock-dev/airlock/internal/policy/pinning"
	"github.com/airlock-dev/airlock/store"
)

// pipeSession is a session with an in-process MCP server over pipes,
// listing what srv lists.
func pipeSession(t *testing.T, srv *server.MCPServer) *Session {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	toClientR, toClientW := io.Pipe()
	toServerR, toServerW := io.Pipe()
	go func() {
		_ = server.NewStdioServer(srv).Listen(ctx, toServerR, toClientW)
		toClientW.Close()
	}()
	s, err := comm.DialMCP(ctx, comm.MCPConn{In: toClientR, Out: toServerW, MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); cancel(); toServerR.Close() })
	return &Session{MCPSession: s}
}

// TestObserveUnchangedNeedsNoWriteLock: a listing that changes no pin —
// what an HTTP upstream under pin_check: every_call sees before almost
// every call — is settled without the store's write transaction, so it
// completes while another process holds the write lock (before issue 23's
// change it waited for the lock, then failed with the store busy). A
// listing that changes a pin still writes it.
func TestObserveUnchangedNeedsNoWriteLock(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	u := New(db, nil)
	t.Cleanup(u.Close)
	srv := server.NewMCPServer("fake", "1", server.WithToolCapabilities(true))
	echo := func(desc string) {
		srv.AddTool(mcp.NewTool("echo", mcp.WithDescription(desc)), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("ok"), nil
		})
	}
	echo("Echoes.")
	s := pipeSession(t, srv)
	up := config.Upstream{ID: "up"}

	// Another process's write lock, held while a step runs when locked.
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	lock := func() func() {
		conn, err := raw.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			t.Fatal(err)
		}
		return func() { conn.ExecContext(ctx, "ROLLBACK"); conn.Close() }
	}

	steps := []struct {
		name   string
		desc   string // echo's description listed in this step
		locked bool
		want   pinning.State
	}{
		{"first listing: pinned", "Echoes.", false, pinning.Pending},
		{"the same listing, the write lock held elsewhere", "Echoes.", true, pinning.Pending},
		{"again", "Echoes.", true, pinning.Pending},
		{"a changed definition is written", "Echoes, and more.", false, pinning.Pending},
	}
	var digests []string
	for _, st := range steps {
		echo(st.desc)
		unlock := func() {}
		if st.locked {
			unlock = lock()
		}
		pins, err := u.Observe(ctx, s, up, "test")
		unlock()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		stored, err := db.UpstreamPin(ctx, "up", "echo")
		if err != nil || stored.State != st.want || pins["echo"] == nil || pins["echo"].SeenDigest != stored.SeenDigest {
			t.Fatalf("%s: stored %+v (%v), observed %+v", st.name, stored, err, pins["echo"])
		}
		digests = append(digests, stored.SeenDigest)
	}
	if digests[0] != digests[2] || digests[3] == digests[0] {
		t.Fatalf("seen digests %v: the changed listing was not written", digests)
	}
}
