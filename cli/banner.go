package cli

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/operator/console"
	"github.com/airlock-dev/airlock/server"
)

// The start-up banner of `airlock serve`, on stderr (stdout is the
// protocol's): what is being served, how a client reaches it, how to stop
// it. `make run` used to print one log line and wait, and a person at the
// terminal could not tell a server from a hung command (issue 24 item 3).
// Under --log-format json each banner is one log record, so every line is
// JSON.

// banner writes a banner as lines of text, or as one log record.
type banner struct {
	Streams
	log  *slog.Logger
	json bool
}

// say writes lines (text) or msg with attrs (JSON).
func (b banner) say(msg string, lines []string, attrs ...any) {
	if b.json {
		b.log.Info(msg, attrs...)
		return
	}
	for _, l := range lines {
		fmt.Fprintln(b.Err, "airlock: "+l)
	}
}

// stdio says that this process is a stdio MCP server, and how to start it
// from the inspector and from Claude Desktop with the same flags (absolute
// paths: a client starts it from anywhere).
func (b banner) stdio(cfg *config.Config, cfgPath, stateFlag, ctxHandle string) {
	exe, err := os.Executable()
	if err != nil {
		exe = "airlock"
	}
	args := []string{"serve"}
	what := "the embedded demo configuration"
	if cfgPath != "" {
		what = cfg.File()
		if abs, err := filepath.Abs(cfgPath); err == nil {
			cfgPath = abs
		}
		args = append(args, "--config", cfgPath)
	}
	if dir, from, err := resolveState(stateFlag); err == nil && from != "the default" {
		// A client does not inherit this shell's $AIRLOCK_STATE.
		args = append(args, "--state", dir)
	}
	if ctxHandle != "" {
		args = append(args, "--context", ctxHandle)
	}
	entry, _ := json.Marshal(DesktopEntry{MCPServers: map[string]DesktopServer{"airlock": {exe, args}}})
	inspector := "npx @modelcontextprotocol/inspector -- " + shellJoin(append([]string{exe}, args...))
	b.say("serving MCP over stdio", []string{
		"serving MCP over stdio on " + what + ": this process answers an MCP client on stdin/stdout; it does not read typed commands.",
		"connect the MCP inspector (Node 22; in the repository: make inspector):  " + inspector,
		"or Claude Desktop (claude_desktop_config.json):  " + string(entry),
		"stop with Ctrl-C (or close stdin).",
	}, "config", what, "inspector", inspector, "claude_desktop", string(entry), "stop", "Ctrl-C or close stdin")
}

// DesktopEntry is the Claude Desktop configuration (claude_desktop_config.json)
// the stdio banner prints.
type DesktopEntry struct {
	MCPServers map[string]DesktopServer `json:"mcpServers"`
}

// DesktopServer is one server of a DesktopEntry: command before args, as
// the client's documentation shows them.
type DesktopServer struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// http says where the endpoints are. Its first line's form is what
// scripts and tests read the address from ("serving streamable HTTP at
// http://ADDR/mcp").
func (b banner) http(cfg *config.Config, addr net.Addr) {
	base := "http://" + addr.String()
	consoleLine, consoleURL := "web console off: set transports.http.console_role to an admin role to serve it at "+console.Path+"/", ""
	if role := cfg.Transports.HTTP.ConsoleRole; role != "" {
		consoleURL = base + console.Path + "/"
		consoleLine = "web console at " + consoleURL + " (log in with a token of role " + role + ")"
	}
	b.say("serving streamable HTTP", []string{
		fmt.Sprintf("serving streamable HTTP at %s%s and SSE at %s%s", base, server.PathStreamable, base, server.PathSSE),
		consoleLine,
		fmt.Sprintf("metrics at %s%s, health at %s and %s", base, server.PathMetrics, server.PathHealthz, server.PathReadyz),
		"stop with Ctrl-C.",
	}, "mcp", base+server.PathStreamable, "sse", base+server.PathSSE, "console", consoleURL,
		"metrics", base+server.PathMetrics, "health", base+server.PathHealthz, "stop", "Ctrl-C")
}

// shellJoin quotes args for a POSIX shell where they need it.
func shellJoin(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+-") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
