// Package cli implements the airlock command: one file per subcommand,
// each a function from parsed flags to an error. main only wires signals and
// the standard streams to [Run].
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/airlock-dev/airlock/internal/kit/calllog"
	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/schemas"
)

// Streams are the process's standard streams.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// ErrUsage marks a command-line mistake (exit status 2).
var ErrUsage = errors.New("usage")

// ErrFailed marks a check that ran and found problems (exit status 1)
// rather than an operational error.
var ErrFailed = errors.New("check failed")

type command struct {
	summary string
	run     func(ctx context.Context, args []string, io Streams) error
}

func commands() map[string]command {
	return map[string]command{
		"serve":         {"run the MCP server (stdio, or --http ADDR for streamable HTTP and SSE)", runServe},
		"audit":         {"verify, tail or export the audit trail", runAudit},
		"pools":         {"print a pool manifest or verify the configured pools", runPools},
		"kill":          {"engage, release or show the kill switch", runKill},
		"config":        {"check a configuration file or print its JSON Schema", runConfig},
		"policy":        {"check, test (against a case table) or explain a policy", runPolicy},
		"report":        {"print a session's Sources Used report (markdown)", runReport},
		"doctor":        {"report which sandbox mechanisms this host provides", runDoctor},
		"attribution":   {"verify the signed attribution of a saved tool result", runAttribution},
		"approvals":     {"list, approve or deny declared needs", runApprovals},
		"upstreams":     {"review and approve the tool definitions of upstream MCP servers", runUpstreams},
		"phase":         {"move a runtime context between planning and execution", runPhase},
		"context":       {"list, show or create runtime contexts (a child restricts its parent)", runContext},
		"init":          {"write a starter configuration with a pool (and its manifest) per directory", runInit},
		"client-config": {"print the entry that starts airlock serve for Claude Desktop, Cursor, VS Code or the inspector", runClientConfig},
	}
}

// Run runs the airlock command line.
func Run(ctx context.Context, args []string, io Streams) error {
	cmds := commands()
	if len(args) == 0 {
		usage(io.Err, cmds)
		return ErrUsage
	}
	if slices.Contains(helpFlags, args[0]) {
		if len(args) > 1 && cmds[args[1]].run != nil { // airlock help CMD
			printHelp(io.Out, args[1])
			return nil
		}
		usage(io.Out, cmds)
		return nil
	}
	if args[0] == "--version" || args[0] == "-version" || args[0] == "version" {
		printVersion(io.Out)
		return nil
	}
	cmd, ok := cmds[args[0]]
	if !ok {
		usage(io.Err, cmds)
		return fmt.Errorf("unknown command %q: %w", args[0], ErrUsage)
	}
	// Help is answered here, before any command looks at its arguments:
	// -h anywhere never runs (or half-runs) the command.
	if wantsHelp(args[1:]) {
		printHelp(io.Out, args[0])
		return nil
	}
	err := cmd.run(ctx, args[1:], io)
	if errors.Is(err, ErrUsage) {
		return usageError{fmt.Sprintf("%s (run 'airlock %s -h' for help)", strings.TrimSuffix(err.Error(), ": "+ErrUsage.Error()), args[0])}
	}
	return err
}

// usageError is a usage mistake with the hint where to find help; it
// still matches ErrUsage.
type usageError struct{ msg string }

func (u usageError) Error() string { return u.msg }
func (u usageError) Unwrap() error { return ErrUsage }

func usage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "airlock — an audited boundary between an AI agent and the world\n\nUsage: airlock COMMAND [flags]\n\nCommands:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'airlock COMMAND -h' for a command's help, 'airlock --version' for the version.")
}

// ExitCode maps an error from Run to a process exit status.
func ExitCode(err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrUsage):
		return 2
	default:
		return 1
	}
}

func newFlags(name string, _ Streams) *flag.FlagSet {
	fs := flag.NewFlagSet("airlock "+name, flag.ContinueOnError)
	// The parse error is returned (and printed once by main); the flag
	// package's own dump of defaults would repeat the help badly.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if flagSetHook != nil {
		flagSetHook(fs)
	}
	return fs
}

// flagSetHook lets a test see every flag set a command defines (to check
// the help names each flag); nil outside tests.
var flagSetHook func(*flag.FlagSet)

// subcommand splits the arguments of a command with verbs, "VERB [ID]
// [flags…]": the verbs in withID take an ID, which may not look like a
// flag. Anything else missing is the command's usage error.
func subcommand(args []string, usage error, withID ...string) (verb, id string, rest []string, err error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "", "", nil, usage
	}
	verb, rest = args[0], args[1:]
	if slices.Contains(withID, verb) {
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			return "", "", nil, usage
		}
		id, rest = rest[0], rest[1:]
	}
	return verb, id, rest, nil
}

// newTable is the operator's tables' layout: columns two spaces apart.
func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// parse parses flags; a parse error is a usage error. (Help never gets
// here: Run answers it before the command runs.)
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%v: %w", err, ErrUsage)
	}
	return nil
}

// stateDir resolves --state, then $AIRLOCK_STATE, then
// $XDG_STATE_HOME/airlock, then ~/.local/state/airlock. serve and every
// operator command resolve it here and nowhere else.
func stateDir(flagValue string) (string, error) {
	dir, _, err := resolveState(flagValue)
	return dir, err
}

// resolveState is stateDir that also says where the directory came from,
// for messages.
func resolveState(flagValue string) (dir, from string, err error) {
	if flagValue != "" {
		dir, err = filepath.Abs(flagValue)
		return dir, "--state", err
	}
	if v := os.Getenv("AIRLOCK_STATE"); v != "" {
		dir, err = filepath.Abs(v)
		return dir, "$AIRLOCK_STATE", err
	}
	if v := os.Getenv("XDG_STATE_HOME"); v != "" {
		dir, err = filepath.Abs(filepath.Join(v, "airlock"))
		return dir, "$XDG_STATE_HOME", err
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", "", fmt.Errorf("no --state, $AIRLOCK_STATE or home directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "airlock"), "the default", nil
}

// ErrNoState is returned by an operator command whose state directory no
// server has ever used.
var ErrNoState = errors.New("no Airlock state there")

// existingState resolves the state directory exactly as serve does and
// refuses one in which no server has ever run. Without this check a
// mistyped --state, or a shell without serve's $AIRLOCK_STATE, made
// `airlock kill` engage a switch no server reads and report success, and
// `phase`/`approvals` create a fresh store in the wrong place
// (TestOperatorRefusesUnusedState).
func existingState(flagValue string) (string, error) {
	dir, from, err := resolveState(flagValue)
	if err != nil {
		return "", err
	}
	// A PostgreSQL store ($AIRLOCK_STORE) is in use whatever this directory
	// holds; a SQLite one leaves its files here (operator.InUse).
	if operator.InUse(dir) {
		return dir, nil
	}
	return "", fmt.Errorf("%s (the state directory from %s): no server has run with it; pass the --state DIR that serve uses (it logs state=DIR at start): %w", dir, from, ErrNoState)
}

// openOperator resolves the state directory (which a server must have
// used) and opens its store for an operator command.
func openOperator(stateFlag string, readOnly bool) (*operator.API, string, error) {
	dir, err := existingState(stateFlag)
	if err != nil {
		return nil, "", err
	}
	op, err := operator.Open(dir, readOnly)
	return op, dir, err
}

// checkedStore names what an operator command checked: the store, the
// state directory and where that came from. A stdio client (Claude
// Desktop, the inspector) drops $AIRLOCK_STATE and $XDG_STATE_HOME, so its
// server may use another state directory than the operator's shell: a
// verdict that names its store shows when it is about the wrong one
// (issue 24 item 4).
func checkedStore(op *operator.API, stateFlag string) string {
	dir, from, err := resolveState(stateFlag)
	if err != nil {
		return "store " + op.Store()
	}
	return fmt.Sprintf("store %s (state directory %s, from %s)", op.Store(), dir, from)
}

// printSchema writes the configuration's JSON Schema (which includes the
// policies section) for `config schema` and `policy schema`.
func printSchema(w io.Writer) error {
	b, err := schemas.File("config.schema.json")
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// newLogger builds serve's logger: text (logfmt) or JSON lines on w, and
// every line logged with a call's context carries the call id (calllog).
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, ErrUsage)
	}
	opts := &slog.HandlerOptions{Level: l}
	var h slog.Handler
	switch format {
	case "text":
		h = slog.NewTextHandler(w, opts)
	case "json":
		h = slog.NewJSONHandler(w, opts)
	default:
		return nil, fmt.Errorf("--log-format %q (want json or text): %w", format, ErrUsage)
	}
	return slog.New(calllog.Handler(h)), nil
}
