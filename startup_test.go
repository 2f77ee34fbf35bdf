package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/cli"
	"github.com/airlock-dev/airlock/internal/testkit/gobuild"
	"github.com/airlock-dev/airlock/internal/testkit/mcptest"
)

// What a person sees starting Airlock from a fresh clone (issue 24 items 3
// and 9), with the real binary at ./bin/airlock run as its own process: the
// stdio banner of `make run` and the client entry it prints (which an
// mcp-go client then starts), Ctrl-C as a clean stop, --log-format json
// with nothing but JSON lines, and `airlock init`'s next lines and its
// warning about an empty configuration.
func TestStartupAsAPersonSeesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	root := t.TempDir()
	bin := filepath.Join(root, "bin", "airlock")
	gobuild.Build(t, bin, ".")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Join(root, "home")}

	t.Run("make run says what it is, how to connect and how to stop", func(t *testing.T) {
		state := filepath.Join(root, "state-stdio")
		p := start(t, root, env, bin, "serve", "--state", state)
		lines := p.until(t, "stop with Ctrl-C")
		banner := strings.Join(lines, "\n")
		for _, want := range []string{
			"serving MCP over stdio on the embedded demo configuration",
			"it does not read typed commands",
			"npx @modelcontextprotocol/inspector -- " + bin + " serve --state " + state,
			"stop with Ctrl-C (or close stdin)",
		} {
			if !strings.Contains(banner, want) {
				t.Errorf("the banner lacks %q:\n%s", want, banner)
			}
		}
		// The Claude Desktop entry, as printed, starts a working server.
		_, entry, ok := strings.Cut(banner, "claude_desktop_config.json):  ")
		if !ok {
			t.Fatalf("no Claude Desktop entry:\n%s", banner)
		}
		entry, _, _ = strings.Cut(entry, "\n")
		var desktop cli.DesktopEntry
		if err := json.Unmarshal([]byte(entry), &desktop); err != nil {
			t.Fatalf("the entry is not JSON: %v\n%s", err, entry)
		}
		srv := desktop.MCPServers["airlock"]
		if srv.Command != bin || !slices.Equal(srv.Args, []string{"serve", "--state", state}) {
			t.Fatalf("entry %+v", srv)
		}
		c, err := client.NewStdioMCPClient(srv.Command, env, srv.Args...)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		mcptest.Connect(t, context.Background(), c, "desktop-entry")
		tools, err := c.ListTools(context.Background(), mcp.ListToolsRequest{})
		if err != nil || !slices.ContainsFunc(tools.Tools, func(tl mcp.Tool) bool { return tl.Name == "read_pool_file" }) {
			t.Fatalf("tools/list through the printed entry: %v %+v", err, tools)
		}
		// Ctrl-C: a clean stop, not "airlock: context canceled".
		code, rest := p.interrupt(t)
		if code != 0 || strings.Contains(rest, "context canceled") || !strings.Contains(rest, "airlock stopped") {
			t.Fatalf("Ctrl-C: exit %d\n%s", code, rest)
		}
	})

	t.Run("init names the binary as typed and warns about no pools", func(t *testing.T) {
		dir := filepath.Join(root, "init-empty")
		must(t, os.MkdirAll(dir, 0o755))
		must(t, os.Symlink(filepath.Dir(bin), filepath.Join(dir, "bin")))
		out, errOut := runIn(t, dir, env, "./bin/airlock", "init")
		if !strings.Contains(out, "next:\n  ./bin/airlock config check airlock.yaml\n  ./bin/airlock serve --config airlock.yaml --state ") ||
			!strings.Contains(out, "\n  ./bin/airlock client-config claude --config airlock.yaml --state ") {
			t.Fatalf("next lines:\n%s", out)
		}
		if !strings.Contains(errOut, "no directory was given, so the configuration has no pool") {
			t.Fatalf("no warning about the empty configuration:\n%s", errOut)
		}
		// The next line runs as printed.
		if b, err := shell(dir, env, "./bin/airlock config check airlock.yaml"); err != nil {
			t.Fatalf("the printed next line fails: %v\n%s", err, b)
		}
		withPool := filepath.Join(root, "init-pool")
		must(t, os.MkdirAll(filepath.Join(withPool, "notes"), 0o755))
		must(t, os.WriteFile(filepath.Join(withPool, "notes", "plan.txt"), []byte("plan\n"), 0o644))
		if _, errOut := runIn(t, withPool, env, bin, "init", "notes"); strings.Contains(errOut, "warning") {
			t.Fatalf("a warning with a pool:\n%s", errOut)
		}
	})

	t.Run("--log-format json writes only JSON, the HTTP banner and warnings included", func(t *testing.T) {
		dir := filepath.Join(root, "json") // init's configuration: a stdio role only
		must(t, os.MkdirAll(filepath.Join(dir, "notes"), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "notes", "plan.txt"), []byte("plan\n"), 0o644))
		runIn(t, dir, env, bin, "init", "notes")
		p := start(t, dir, env, bin, "serve", "--http", "127.0.0.1:0", "--config", "airlock.yaml", "--log-format", "json", "--state", filepath.Join(root, "state-json"))
		lines := p.until(t, `"msg":"serving streamable HTTP"`)
		var banner struct{ MCP, Console string }
		must(t, json.Unmarshal([]byte(lines[len(lines)-1]), &banner))
		resp, err := http.Get(strings.TrimSuffix(banner.MCP, "/mcp") + "/")
		must(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "MCP endpoint") {
			t.Fatalf("GET /: %d %s", resp.StatusCode, body)
		}
		code, rest := p.interrupt(t)
		all := strings.Join(lines, "\n") + "\n" + rest
		if code != 0 || !strings.Contains(all, "no HTTP client can authenticate") || banner.Console != "" {
			t.Fatalf("exit %d:\n%s", code, all)
		}
		allJSON(t, all)

		// An error ends serve as a JSON record too, not a plain line.
		cmd := exec.Command(bin, "serve", "--log-format", "json", "--config", "missing.yaml", "--state", filepath.Join(root, "state-json"))
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), `"level":"ERROR"`) {
			t.Fatalf("serve on a missing config: %v\n%s", err, out)
		}
		allJSON(t, string(out))
	})
}

// proc is a started airlock with its stderr read line by line.
type proc struct {
	cmd   *exec.Cmd
	lines chan string
	stdin io.WriteCloser
}

func start(t *testing.T, dir string, env []string, bin string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	stdin, err := cmd.StdinPipe() // stays open: a stdio server waits on it
	must(t, err)
	stderr, err := cmd.StderrPipe()
	must(t, err)
	must(t, cmd.Start())
	p := &proc{cmd: cmd, lines: make(chan string, 1024), stdin: stdin}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return p
}

// until returns stderr's lines up to the first containing marker; the
// test fails if the process ends first or the test's time runs out.
func (p *proc) until(t *testing.T, marker string) []string {
	t.Helper()
	var lines []string
	timeout := time.After(time.Until(deadline(t)))
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("airlock ended before printing %q:\n%s", marker, strings.Join(lines, "\n"))
			}
			lines = append(lines, l)
			if strings.Contains(l, marker) {
				return lines
			}
		case <-timeout:
			t.Fatalf("no %q:\n%s", marker, strings.Join(lines, "\n"))
		}
	}
}

// interrupt sends SIGINT (Ctrl-C) and returns the exit status and the rest
// of stderr.
func (p *proc) interrupt(t *testing.T) (int, string) {
	t.Helper()
	must(t, p.cmd.Process.Signal(syscall.SIGINT))
	var rest []string
	for l := range p.lines {
		rest = append(rest, l)
	}
	err := p.cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, strings.Join(rest, "\n")
}

// deadline bounds a wait for output that comes at once when all is well:
// two minutes, or less when the test's own time ends sooner. Reaching it
// fails the test instead of hanging it; it decides nothing when all is well.
func deadline(t *testing.T) time.Time {
	d := time.Now().Add(2 * time.Minute)
	if td, ok := t.Deadline(); ok && td.Add(-5*time.Second).Before(d) {
		return td.Add(-5 * time.Second)
	}
	return d
}

func runIn(t *testing.T, dir string, env []string, name string, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s%s", name, args, err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

func shell(dir string, env []string, line string) ([]byte, error) {
	cmd := exec.Command("sh", "-ec", line)
	cmd.Dir, cmd.Env = dir, env
	return cmd.CombinedOutput()
}

// allJSON fails on any non-empty line that is not one JSON object.
func allJSON(t *testing.T, text string) {
	t.Helper()
	for _, l := range strings.Split(text, "\n") {
		var v map[string]any
		if strings.TrimSpace(l) != "" && json.Unmarshal([]byte(l), &v) != nil {
			t.Errorf("not a JSON line: %q", l)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
