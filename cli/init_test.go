package cli

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/testkit/golden"
	"github.com/airlock-dev/airlock/internal/testkit/mcptest"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// goldenFile compares got with testdata/name, or rewrites it under -update.
func goldenFile(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got, "go test ./cli -run "+t.Name()+" -update")
}

// initTree makes two pool directories, one holding a .env beside its files.
func initTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range []string{"docs/sub", "docs/.git", "My Notes"} {
		must(t, os.MkdirAll(filepath.Join(root, d), 0o755))
	}
	writeFile(t, filepath.Join(root, "docs", "guide.md"), "# Guide\nread me\n")
	writeFile(t, filepath.Join(root, "docs", "sub", "table.csv"), "a,b\n1,2\n")
	writeFile(t, filepath.Join(root, "docs", ".env"), "API_KEY=sk-not-for-the-agent\n")
	writeFile(t, filepath.Join(root, "docs", ".git", "config"), "[core]\n")
	writeFile(t, filepath.Join(root, "My Notes", "n.txt"), "a note\n")
	return root
}

// TestInitServesItsPools: init on two directories → config check accepts
// the file → `airlock serve --config` over stdio, driven by a real mcp-go
// client, lists both pools and reads a file (fenced: init's pools are
// untrusted), while the .env left out of the manifest cannot be read.
func TestInitServesItsPools(t *testing.T) {
	root := initTree(t)
	cfg := filepath.Join(root, "airlock.yaml")
	out, err := run(t, "init", "--config", cfg, filepath.Join(root, "docs"), filepath.Join(root, "My Notes"))
	if err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	if !strings.Contains(out, `left out 2 hidden file(s)`) {
		t.Errorf("init output does not mention the hidden files:\n%s", out)
	}
	data, err := os.ReadFile(cfg)
	must(t, err)
	goldenFile(t, "init.golden.yaml", data)
	manifest, err := os.ReadFile(filepath.Join(root, "docs", "SHA256SUMS"))
	must(t, err)
	if strings.Contains(string(manifest), ".env") || strings.Contains(string(manifest), ".git") || !strings.Contains(string(manifest), "  sub/table.csv\n") {
		t.Fatalf("docs manifest:\n%s", manifest)
	}
	if out, err := run(t, "config", "check", cfg); err != nil {
		t.Fatalf("config check: %v\n%s", err, out)
	}
	if out, err := run(t, "pools", "verify", "--config", cfg, "--state", t.TempDir()); err != nil {
		t.Fatalf("pools verify: %v\n%s", err, out)
	}

	c := serveStdio(t, "--config", cfg, "--state", filepath.Join(root, "state"))
	list := callTool(t, c, "list_pools", nil)
	if list.IsError || !strings.Contains(mcptest.Text(list), "docs") || !strings.Contains(mcptest.Text(list), "my-notes") {
		t.Fatalf("list_pools: %s", mcptest.Text(list))
	}
	read := callTool(t, c, "read_pool_file", map[string]any{"pool": "docs", "path": "guide.md"})
	if read.IsError || !strings.Contains(mcptest.Text(read), "read me") || !strings.Contains(mcptest.Text(read), "UNTRUSTED_EXTERNAL_CONTENT") {
		t.Fatalf("read_pool_file guide.md: %s", mcptest.Text(read))
	}
	secret := callTool(t, c, "read_pool_file", map[string]any{"pool": "docs", "path": ".env"})
	if !secret.IsError || !strings.HasPrefix(mcptest.Text(secret), "INTEGRITY_FAILURE") || strings.Contains(mcptest.Text(secret), "sk-not") {
		t.Fatalf("read_pool_file .env: %s", mcptest.Text(secret))
	}
}

// TestInitRefuses: init never overwrites, and a refusal writes nothing.
func TestInitRefuses(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root string)
		args  func(root string) []string
		want  error
	}{
		{"existing config", func(t *testing.T, root string) { writeFile(t, filepath.Join(root, "airlock.yaml"), "keep\n") },
			func(root string) []string { return []string{filepath.Join(root, "docs")} }, ErrExists},
		{"existing manifest", func(t *testing.T, root string) { writeFile(t, filepath.Join(root, "My Notes", "SHA256SUMS"), "keep\n") },
			func(root string) []string {
				return []string{filepath.Join(root, "docs"), filepath.Join(root, "My Notes")}
			}, ErrExists},
		{"same directory twice", nil,
			func(root string) []string {
				return []string{filepath.Join(root, "docs"), filepath.Join(root, "docs") + "/"}
			}, ErrUsage},
		{"a file, not a directory", nil,
			func(root string) []string { return []string{filepath.Join(root, "docs", "guide.md")} }, ErrUsage},
		{"missing directory", nil,
			func(root string) []string { return []string{filepath.Join(root, "nope")} }, os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := initTree(t)
			if tt.setup != nil {
				tt.setup(t, root)
			}
			before := treeSnapshot(t, root)
			args := append([]string{"init", "--config", filepath.Join(root, "airlock.yaml")}, tt.args(root)...)
			if _, err := run(t, args...); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if after := treeSnapshot(t, root); after != before {
				t.Fatalf("a refused init changed the disk:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

func TestPoolID(t *testing.T) {
	for in, want := range map[string]string{
		"docs": "docs", "My Notes": "my-notes", "..hidden": "hidden", "Ünïcode": "n-code", "___": "pool",
		"a" + strings.Repeat("b", 80): "a" + strings.Repeat("b", 59),
	} {
		got := poolID(in)
		if got != want {
			t.Errorf("poolID(%q) = %q, want %q", in, got, want)
		}
	}
	seen := map[string]bool{}
	if a, b := uniqueID("x", seen), uniqueID("x", seen); a != "x" || b != "x-2" {
		t.Errorf("uniqueID: %q %q", a, b)
	}
}

// treeSnapshot lists every file under root with its content.
func treeSnapshot(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	must(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		b.WriteString(p + "=" + string(data) + ";")
		return err
	}))
	return b.String()
}

// serveStdio runs `airlock serve ARGS...` in-process on a pipe pair and
// connects a real mcp-go client to it over stdio framing.
func serveStdio(t *testing.T, args ...string) *client.Client {
	t.Helper()
	return serveStdioLog(t, io.Discard, args...)
}

// servedState serves a fresh state directory over stdio and makes one
// call, so that the default context exists; it returns the directory and
// what `context list` shows of it. The server runs until the test ends.
func servedState(t *testing.T) (state, contexts string) {
	t.Helper()
	stateEnv(t)
	state = t.TempDir()
	c := serveStdio(t, "--state", state)
	if res := callTool(t, c, "list_pools", nil); res.IsError {
		t.Fatal(mcptest.Text(res))
	}
	return state, mustRun(t, "context", "list", "--state", state)
}

// serveStdioLog is serveStdio with serve's stderr (its log) going to errW.
func serveStdioLog(t *testing.T, errW io.Writer, args ...string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()   // client → server
	outR, outW := io.Pipe() // server → client
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, append([]string{"serve"}, args...), Streams{In: inR, Out: outW, Err: errW})
		outW.Close()
	}()
	c := client.NewClient(transport.NewIO(outR, inW, io.NopCloser(strings.NewReader(""))))
	t.Cleanup(func() {
		c.Close()
		inW.Close()
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute): // a hang guard
			t.Error("serve did not stop")
		}
	})
	must(t, c.Start(ctx))
	ictx, icancel := context.WithTimeout(ctx, 20*time.Second)
	defer icancel()
	mcptest.Initialize(t, ictx, c, "airlock-cli-test", mcp.LATEST_LEGACY_PROTOCOL_VERSION)
	return c
}

func callTool(t *testing.T, c *client.Client, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return mcptest.Call(t, ctx, c, name, args)
}
