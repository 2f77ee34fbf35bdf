package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestPipelinePoolChangedDuringRunIsWithheld (issue 26 item 9): pools are
// bound into the sandbox live, so a pool file can change between the
// check before a run and the pipeline's read. A pipeline copies
// delta/rows.csv, then waits on a FIFO; the test changes the file from
// outside while it waits — the FIFO's opening is the handshake, no sleep —
// and lets it finish. Any change (even one restoring the old bytes) is
// INTEGRITY_FAILURE, audited, and nothing the run wrote is published (no
// output pool); an untouched pool publishes as before.
func TestPipelinePoolChangedDuringRunIsWithheld(t *testing.T) {
	const original, other = "a,b\n1,2\n3,4\n", "a,b\n6,6\n6,6\n" // same size
	tests := []struct {
		name   string
		change func(t *testing.T, rows string)
		code   string
	}{
		{"untouched", func(*testing.T, string) {}, ""},
		{"rewritten in place", func(t *testing.T, rows string) { overwrite(t, rows, other) }, "INTEGRITY_FAILURE"},
		{"rewritten, then restored", func(t *testing.T, rows string) {
			overwrite(t, rows, other)
			overwrite(t, rows, original)
		}, "INTEGRITY_FAILURE"},
		{"replaced by a rename", func(t *testing.T, rows string) {
			must(t, os.WriteFile(rows+".new", []byte(other), 0o644))
			must(t, os.Rename(rows+".new", rows))
		}, "INTEGRITY_FAILURE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, gate := gatedFixture(t)
			rows := filepath.Join(f.dir, "pools", "delta", "rows.csv")
			c := f.connect(t)
			published := func() []string {
				m, _ := filepath.Glob(filepath.Join(f.state, "runs", "*", "published*"))
				return m
			}
			before := published()

			w, done := startGatedRun(t, c, gate)
			tt.change(t, rows)
			_, err := w.WriteString("go\n")
			must(t, err)
			must(t, w.Close())
			res := <-done

			if code(res) != tt.code {
				t.Fatalf("code %q, want %q: %s", code(res), tt.code, text(res))
			}
			if marks, _ := filepath.Glob(filepath.Join(f.state, "runs", "*.run")); len(marks) != 0 {
				t.Fatalf("a finished run left its mark: %v", marks) // only an interrupted one may
			}
			pools := text(call(t, c, "list_pools", nil))
			if tt.code == "" {
				if len(published()) <= len(before) || !strings.Contains(pools, "run-") {
					t.Fatalf("an untouched run published nothing: %v\n%s", published(), pools)
				}
				return
			}
			if !strings.Contains(text(res), "delta") || strings.Contains(text(res), f.dir) {
				t.Errorf("the refusal should name the pool, not a host path: %s", text(res))
			}
			if got := published(); len(got) != len(before) || strings.Contains(pools, "run-") {
				t.Fatalf("a run over a changed pool published: %v\n%s", got, pools)
			}
			var ended []string
			for _, r := range f.auditRecords(t) {
				if r.Tool == "run_pipeline" && r.Outcome != "started" {
					ended = append(ended, r.Violation)
				}
			}
			if len(ended) != 1 || ended[0] != tt.code {
				t.Fatalf("run_pipeline records end with %v, want [%s]", ended, tt.code)
			}
		})
	}
}

// overwrite rewrites a file in place (same inode).
func overwrite(t *testing.T, name, content string) {
	t.Helper()
	fh, err := os.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0)
	must(t, err)
	_, err = fh.WriteString(content)
	must(t, err)
	must(t, fh.Close())
}

// gatedFixture is a fixture (stdio role runner) whose configuration adds
// read_then_wait: a pipeline that copies delta/rows.csv into its output,
// then waits on the FIFO gate until a line comes.
func gatedFixture(t *testing.T) (*fixture, string) {
	t.Helper()
	gate := filepath.Join(t.TempDir(), "gate")
	must(t, os.Chmod(filepath.Dir(gate), 0o711))
	must(t, os.Chmod(filepath.Dir(filepath.Dir(gate)), 0o711))
	must(t, syscall.Mkfifo(gate, 0o666))
	must(t, os.Chmod(gate, 0o666)) // past the umask: the pipeline's user opens it
	pipeline := fmt.Sprintf(`  - name: read_then_wait
    description: Copies delta/rows.csv, then waits for the test.
    argv: [/bin/sh, -c, 'cat "$1" > {out}/copy.csv && read go < "$2"', sh, '{pool.delta}/rows.csv', %q]
    inputs: [delta]
    files: [%q]
    outputs: [copy.csv]
`, gate, gate)
	return newFixtureConfig(t, strings.Replace(fmt.Sprintf(testConfig, "runner"), "\npipelines:\n", "\npipelines:\n"+pipeline, 1)), gate
}

// startGatedRun calls run_pipeline read_then_wait on c and returns once
// the pipeline is under way: opening gate for writing returns only when
// the pipeline opened it for reading, after its copy — the handshake, no
// sleep. Writing a line to w (and closing it) lets the run finish; done
// gets its answer (a transport error as an error result).
func startGatedRun(t *testing.T, c *client.Client, gate string) (w *os.File, done <-chan *mcp.CallToolResult) {
	t.Helper()
	answers := make(chan *mcp.CallToolResult, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "run_pipeline", map[string]any{"pipeline": "read_then_wait"}
		res, err := c.CallTool(context.Background(), req)
		if err != nil {
			res = mcp.NewToolResultError("transport: " + err.Error())
		}
		answers <- res
	}()
	opened := make(chan *os.File, 1)
	go func() {
		if w, err := os.OpenFile(gate, os.O_WRONLY, 0); err == nil {
			opened <- w
		}
	}()
	t.Cleanup(func() { // unblocks the opener if the run never got there
		if r, err := os.OpenFile(gate, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			r.Close()
		}
	})
	select {
	case w = <-opened:
		t.Cleanup(func() { w.Close() })
		return w, answers
	case res := <-answers:
		t.Fatalf("the run ended before it waited: %s", text(res))
	case <-time.After(2 * time.Minute): // a hang guard
		t.Fatal("the pipeline never opened its FIFO")
	}
	return nil, nil
}
