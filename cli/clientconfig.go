package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/airlock-dev/airlock/internal/config"
)

// InspectorPackage is the MCP inspector `client-config inspector` names:
// the version the e2e tests pin and `make inspect` runs
// (TestClientConfigInspectorVersion keeps them in step), so the printed
// line runs what the project tested rather than whatever is newest.
const InspectorPackage = "@modelcontextprotocol/inspector@2.12.0"

// clientServerName is the key of Airlock's entry in a client's server map.
const clientServerName = "airlock"

// runClientConfig prints a client's entry for `airlock serve` with
// absolute paths to this binary, the configuration and the state
// directory (ToolHive writes these for its users; issue 24 item 4). A
// stdio client starts the server with an environment of its own: Claude
// Desktop and the inspector drop $AIRLOCK_STATE and $XDG_STATE_HOME, and
// run it from another working directory, so an entry that relied on
// either made the server use another store than the operator's commands
// — approvals, kill switch and audit trail in two places. The entry
// therefore always carries --state, resolved here exactly as the
// operator's commands resolve it.
func runClientConfig(_ context.Context, args []string, io Streams) error {
	usage := fmt.Errorf("airlock client-config claude|cursor|vscode|inspector [--config FILE] [--state DIR]: %w", ErrUsage)
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return usage
	}
	client := args[0]
	fs := newFlags("client-config", io)
	cfgPath := fs.String("config", "", "configuration file the client's server runs (default: the embedded demo)")
	state := fs.String("state", "", "state directory the client's server uses (default as for serve, resolved here)")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return usage
	}
	argv, err := clientServeArgv(*cfgPath, *state)
	if err != nil {
		return err
	}
	switch client {
	case "claude", "cursor":
		// Claude Desktop's claude_desktop_config.json and Cursor's
		// mcp.json share this shape.
		return writeJSON(io, map[string]any{"mcpServers": map[string]any{clientServerName: stdioEntry(argv, false)}})
	case "vscode":
		// VS Code's .vscode/mcp.json (or the user's mcp.json).
		return writeJSON(io, map[string]any{"servers": map[string]any{clientServerName: stdioEntry(argv, true)}})
	case "inspector":
		// Inspector options go before "--": after it everything is the
		// server's command line, so serve's --config is not read as the
		// inspector's own.
		words := append([]string{"npx", "-y", InspectorPackage, "--"}, argv...)
		for i, w := range words {
			words[i] = shellQuote(w)
		}
		_, err := fmt.Fprintln(io.Out, strings.Join(words, " "))
		return err
	default:
		return fmt.Errorf("unknown client %q (want claude, cursor, vscode or inspector): %w", client, ErrUsage)
	}
}

// clientServeArgv is the command line a client runs: this binary's
// absolute path, serve, the configuration's absolute path (checked to
// load, so a client is never handed an entry whose server cannot start),
// and the state directory's.
func clientServeArgv(cfgPath, stateFlag string) ([]string, error) {
	bin, err := os.Executable()
	if err == nil {
		bin, err = filepath.EvalSymlinks(bin)
	}
	if err != nil {
		return nil, fmt.Errorf("finding this binary's path: %w", err)
	}
	argv := []string{bin, "serve"}
	if cfgPath != "" {
		abs, err := filepath.Abs(cfgPath)
		if err != nil {
			return nil, err
		}
		if _, err := config.Load(abs); err != nil {
			return nil, err
		}
		argv = append(argv, "--config", abs)
	}
	dir, err := stateDir(stateFlag)
	if err != nil {
		return nil, err
	}
	return append(argv, "--state", dir), nil
}

// stdioServer is one server of a client's configuration file, its fields
// in the order the clients' documentation shows them.
type stdioServer struct {
	Type    string   `json:"type,omitempty"`
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

func stdioEntry(argv []string, typed bool) stdioServer {
	e := stdioServer{Command: argv[0], Args: argv[1:]}
	if typed {
		e.Type = "stdio"
	}
	return e
}

func writeJSON(io Streams, v any) error {
	enc := json.NewEncoder(io.Out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// shellSafe are the words a POSIX shell reads as themselves.
var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`)

// shellQuote quotes w for a POSIX shell: as is when safe, else in single
// quotes (a path with a space or a quote stays one word).
func shellQuote(w string) string {
	if shellSafe.MatchString(w) {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
