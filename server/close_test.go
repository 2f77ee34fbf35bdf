package server

import (
	"bytes"
	"runtime"
	"testing"
	"time"
)

// TestCloseStopsSessionSweepers: every Handler builds a streamable HTTP
// handler whose idle-session sweeper is a goroutine with a ticker; Close
// stops them. Before, they outlived the server: each test's server left
// one behind, logging "Sweeping expired session" and allocating in later
// tests (one of which counted the process's allocations).
func TestCloseStopsSessionSweepers(t *testing.T) {
	f := newFixture(t, "local")
	before := sweepers()
	f.srv.Handler()
	f.srv.Handler()
	if got := sweepers(); got != before+2 {
		t.Fatalf("%d sweepers after two handlers, want %d: the count does not see them", got, before+2)
	}
	f.srv.Close()
	// A stopped sweeper returns when its goroutine next runs: wait for
	// that, as long as it takes, rather than for a fixed time.
	deadline := time.Now().Add(time.Minute)
	for sweepers() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d sweepers a minute after Close, want at most %d", sweepers(), before)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sweepers counts the goroutines running mcp-go's session sweeper.
func sweepers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			count := 0
			for _, g := range bytes.Split(buf[:n], []byte("\n\n")) {
				if bytes.Contains(g, []byte("(*StreamableHTTPServer).startSessionSweeper")) {
					count++
				}
			}
			return count
		}
		buf = make([]byte, 2*len(buf))
	}
}
