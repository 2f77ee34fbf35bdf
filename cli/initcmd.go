package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/yamlfile"
	"github.com/airlock-dev/airlock/sources"
)

// ErrExists is returned by `airlock init` when a file it would write is
// already there: init never overwrites a configuration or a manifest.
var ErrExists = errors.New("already exists; airlock init never overwrites")

// runInit writes a starter configuration: one untrusted pool per directory,
// each with a SHA256SUMS manifest built by sources.BuildManifest, a
// deny-first policy that allows only the read tools, and a stdio role bound
// to every pool. Everything it would write is checked before anything is
// written, so a refusal leaves the disk as it was.
func runInit(_ context.Context, args []string, io Streams) error {
	fs := newFlags("init", io)
	cfgPath := fs.String("config", "airlock.yaml", "where to write the configuration")
	stateFlag := fs.String("state", "", "the state directory the next steps name (default as for serve)")
	dirs, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	state, err := stateDir(*stateFlag)
	if err != nil {
		return err
	}
	plan, err := planInit(*cfgPath, dirs)
	if err != nil {
		return err
	}
	if err := plan.write(); err != nil {
		return err
	}
	plan.summary(io, state)
	return nil
}

// parseInterspersed parses flags before, between and after positional
// arguments (`airlock init docs --config x.yaml notes`).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos, args = append(pos, args[0]), args[1:]
	}
}

// parseExactly is parseInterspersed for a command that takes exactly n
// positional arguments: any other number is ErrUsage with the command's use.
func parseExactly(fs *flag.FlagSet, args []string, n int, use string) ([]string, error) {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != n {
		return nil, fmt.Errorf("%s: %w", use, ErrUsage)
	}
	return pos, nil
}

// initPool is one directory to become a pool.
type initPool struct {
	id, dir, rel string
	manifest     *sources.Manifest
	hidden       []string // files left out of the manifest
}

type initPlan struct {
	cfgPath string
	pools   []initPool
}

// planInit resolves ids and manifests and refuses, before anything is
// written, a configuration or manifest that exists, a directory that is
// not one, and the same directory twice.
func planInit(cfgPath string, dirs []string) (*initPlan, error) {
	cfgAbs, err := filepath.Abs(cfgPath)
	if err != nil {
		return nil, err
	}
	if _, err := os.Lstat(cfgAbs); err == nil {
		return nil, fmt.Errorf("%s %w", cfgPath, ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	plan := &initPlan{cfgPath: cfgAbs}
	seenDir, seenID := map[string]bool{}, map[string]bool{}
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, err
		}
		if st, err := os.Stat(abs); err != nil {
			return nil, fmt.Errorf("pool directory: %w", err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("pool directory %s: not a directory: %w", d, ErrUsage)
		}
		if seenDir[abs] {
			return nil, fmt.Errorf("pool directory %s given twice: %w", d, ErrUsage)
		}
		seenDir[abs] = true
		mpath := filepath.Join(abs, sources.DefaultManifestName)
		if _, err := os.Lstat(mpath); err == nil {
			return nil, fmt.Errorf("%s %w (delete it, or write the configuration by hand)", filepath.Join(d, sources.DefaultManifestName), ErrExists)
		}
		m, err := sources.BuildManifest(abs)
		if err != nil {
			return nil, fmt.Errorf("pool directory %s: %w", d, err)
		}
		p := initPool{id: uniqueID(poolID(filepath.Base(abs)), seenID), dir: abs, rel: relTo(filepath.Dir(cfgAbs), abs)}
		// Hidden files (.env, .git/…) are where secrets and history live;
		// a starter pool leaves them out so the agent never sees them
		// unless someone lists them on purpose.
		p.manifest = m.Filter(func(e sources.Entry) bool {
			if hiddenPath(e.Path) {
				p.hidden = append(p.hidden, e.Path)
				return false
			}
			return true
		})
		plan.pools = append(plan.pools, p)
	}
	return plan, nil
}

func hiddenPath(p string) bool {
	for _, seg := range strings.Split(p, "/") {
		if strings.HasPrefix(seg, ".") {
			return true
		}
	}
	return false
}

var notIDChar = regexp.MustCompile(`[^a-z0-9_.-]+`)

// poolID turns a directory name into a pool id ([a-z0-9][a-z0-9_.-]{0,63}).
func poolID(base string) string {
	id := notIDChar.ReplaceAllString(strings.ToLower(base), "-")
	id = strings.TrimLeft(id, "_.-")
	if len(id) > 60 {
		id = id[:60]
	}
	if id == "" {
		id = "pool"
	}
	return id
}

func uniqueID(id string, seen map[string]bool) string {
	out := id
	for n := 2; seen[out]; n++ {
		out = fmt.Sprintf("%s-%d", id, n)
	}
	seen[out] = true
	return out
}

// relTo is target relative to base when it lies below it, else absolute.
func relTo(base, target string) string {
	rel, err := filepath.Rel(base, target)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return target
	}
	return filepath.ToSlash(rel)
}

// write writes every manifest, then the configuration, each with O_EXCL:
// a file that appeared since planInit looked is still not overwritten.
func (p *initPlan) write() error {
	for _, pool := range p.pools {
		var b bytes.Buffer
		if _, err := pool.manifest.WriteTo(&b); err != nil {
			return err
		}
		if err := writeNew(filepath.Join(pool.dir, sources.DefaultManifestName), b.Bytes()); err != nil {
			return err
		}
	}
	// In the one canonical style `airlock policy fmt` writes (issue 24
	// item 7): a starter file that fmt --check called unformatted taught
	// the wrong style. Format keeps every comment here (each heads a key
	// or ends its line) and refuses output that means anything else.
	cfg, err := yamlfile.Format(p.cfgPath, p.render())
	if err != nil {
		return err
	}
	return writeNew(p.cfgPath, cfg)
}

func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s %w", path, ErrExists)
	}
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// yq quotes a string for YAML (a JSON string is a YAML double-quoted
// scalar), so a directory name can never add a key or a line.
func yq(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// render is the starter configuration. Its comments are the short manual:
// what each section does and what to change next.
func (p *initPlan) render() []byte {
	var b strings.Builder
	b.WriteString(`# Airlock configuration written by airlock init.
# Check it:  airlock config check FILE        Serve it:  airlock serve --config FILE
# Every key is described by the JSON Schema that airlock config schema prints.

server:
  name: airlock

# Read-only source pools. The agent reads only the files listed in a pool's
# manifest (SHA256SUMS, sha256sum format), and only while their bytes still
# match. Hidden files (.env, .git/...) were left out. After changing a pool's
# files, rebuild its manifest:  airlock pools manifest DIR > DIR/SHA256SUMS
# untrusted (the default): what the agent reads is fenced and it is told not
# to follow instructions in it. Set trusted only for files you wrote yourself.
`)
	if len(p.pools) == 0 {
		b.WriteString("pools: []\n")
	} else {
		b.WriteString("pools:\n")
	}
	ids := make([]string, 0, len(p.pools))
	for _, pool := range p.pools {
		ids = append(ids, pool.id)
		fmt.Fprintf(&b, "  - id: %s\n    description: %s\n    path: %s\n    trust: untrusted\n",
			pool.id, yq("Files from "+filepath.Base(pool.dir)), yq(pool.rel))
	}
	fmt.Fprintf(&b, `
# Deny-first: a capability that no allow pattern names is refused, and a
# deny always wins. This policy lets the agent list and read its pools and
# nothing else. To let it ask for outside information, allow comm.fetch with
# network.allow_hosts and a require_approval rule; to run programs, declare
# them under pipelines: and allow pipeline.run:NAME. README: "Policies".
policies:
  default:
    allow: ["pool.*"]
    limits:
      max_actions: 1000           # per runtime context, across reconnects and restarts

# A role is what a principal gets. stdio (Claude Desktop, an IDE) runs as
# local; HTTP clients need a role with tokens (README: "Hosted agents").
roles:
  local:
    policy: default
    pools: [%s]
    initial_phase: planning       # an operator moves it on: airlock phase CONTEXT execution --reason ...

transports:
  stdio:
    role: local
`, strings.Join(ids, ", "))
	return []byte(b.String())
}

// summary says what was written and what to run next. The next steps pass
// --state explicitly: a client starts serve without the shell's
// $AIRLOCK_STATE, and the operator's commands must find the same store
// (issue 24 item 4).
func (p *initPlan) summary(io Streams, state string) {
	cfg, prog := relOrSelf(p.cfgPath), invokedAs()
	fmt.Fprintf(io.Out, "wrote %s (%d pools)\n", cfg, len(p.pools))
	if len(p.pools) == 0 {
		fmt.Fprintf(io.Err, "airlock init: warning: no directory was given, so the configuration has no pool and the agent can read nothing;"+
			" name directories (%s init [--config FILE] DIR...) or add pools to %s by hand\n", prog, cfg)
	}
	for _, pool := range p.pools {
		fmt.Fprintf(io.Out, "wrote %s (pool %s, %d file(s))\n", relOrSelf(filepath.Join(pool.dir, sources.DefaultManifestName)), pool.id, pool.manifest.Len())
		if len(pool.hidden) > 0 {
			fmt.Fprintf(io.Out, "  left out %d hidden file(s), e.g. %q; list them in the manifest by hand if the agent should read them\n", len(pool.hidden), pool.hidden[0])
		}
	}
	st := shellQuote(relOrSelf(state))
	fmt.Fprintf(io.Out, "next:\n  %s config check %s\n  %s serve --config %s --state %s\n", prog, cfg, prog, cfg, st)
	fmt.Fprintf(io.Out, "  %s client-config claude --config %s --state %s   # a client's entry (or cursor, vscode, inspector)\n", prog, cfg, st)
}

// invokedAs is the command as the person typed it, for lines to copy:
// "./bin/airlock" in a clone, "airlock" from the PATH. A binary not named
// airlock (a test binary) or one `go run` built in a temporary directory
// reads as "airlock".
func invokedAs() string {
	if len(os.Args) == 0 || filepath.Base(os.Args[0]) != "airlock" || strings.HasPrefix(os.Args[0], os.TempDir()) {
		return "airlock"
	}
	return os.Args[0]
}

// relOrSelf shortens path relative to the working directory for messages.
func relOrSelf(path string) string {
	if wd, err := os.Getwd(); err == nil {
		if r := relTo(wd, path); !filepath.IsAbs(r) {
			return r
		}
	}
	return path
}
