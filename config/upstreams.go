package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Upstream is an existing MCP server put behind Airlock (issue 15). The
// agent never talks to it: its tools are reached through declare_need
// (operation comm.mcp), each as the capability mcp.<id>.<tool>, and only
// in a definition an operator approved (`airlock upstreams review|approve`).
//
// Exactly one of Command (a stdio server, run inside the pipeline sandbox:
// no network, no state directory) and URL (a streamable HTTP server,
// reached through comm's connect-time checked dialer) is set.
type Upstream struct {
	ID          string `json:"id" jsonschema:"pattern=^[a-z0-9][a-z0-9_-]{0\\,31}$,description=Names the upstream in capabilities (mcp.<id>.<tool>) and in declare_need's parameters.upstream."`
	Description string `json:"description,omitempty" jsonschema:"maxLength=1024,description=What the upstream is for; shown to operators (not to the agent)."`
	// Command runs a stdio server inside the pipeline sandbox.
	Command []string `json:"command,omitempty" jsonschema:"description=A stdio MCP server: the argument vector (never a shell string)\\, run in the pipeline sandbox with no network and no view of the state directory."`
	// ReadOnly are host paths the stdio server needs to read (its
	// package directory); bound read-only at the same path.
	ReadOnly []string `json:"read_only,omitempty" jsonschema:"description=Host files or directories a stdio server needs (its code)\\, bound read-only at the same path inside the sandbox; relative to the config file."`
	// Env are the stdio server's environment variables, read from the
	// server's environment or files: nothing else of Airlock's
	// environment is passed, and never the agent's token.
	Env map[string]TokenSource `json:"env,omitempty" jsonschema:"description=Environment variables for a stdio server\\, each read from an env variable or a file of Airlock's host (credentials). Nothing else of Airlock's environment is passed."`
	// URL is a streamable HTTP server.
	URL string `json:"url,omitempty" jsonschema:"description=A streamable HTTP MCP server (http or https URL). Reached with comm.fetch's protections: connect-time address checks (comm.fetch.allow_private)\\, no proxy."`
	// Headers are sent to an HTTP server with every request.
	Headers map[string]TokenSource `json:"headers,omitempty" jsonschema:"description=HTTP headers for an HTTP server (e.g. Authorization)\\, each read from an env variable or a file. The agent's own token is never sent."`
	// Hosts a stdio server could reach; refused for now (see checkUpstreams).
	Hosts []string `json:"hosts,omitempty" jsonschema:"description=Network hosts a stdio server may reach. Not supported yet: a stdio upstream has no network\\, and a config naming hosts is refused."`
	Trust string   `json:"trust,omitempty" jsonschema:"enum=untrusted,description=Trust of what the upstream returns; always fenced as untrusted (default untrusted)."`
	// Limits of one call.
	TimeoutMS      int64 `json:"timeout_ms,omitempty" jsonschema:"minimum=0,description=Whole-call timeout: start\\, handshake\\, listing and the tool call (default 30000)."`
	MaxResultBytes int64 `json:"max_result_bytes,omitempty" jsonschema:"minimum=0,description=Largest tool result accepted; a larger one is UPSTREAM_RESULT_TOO_LARGE (default 1048576)."`
	MemoryBytes    int64 `json:"memory_bytes,omitempty" jsonschema:"minimum=0,description=Memory of a stdio server's sandbox (default 536870912)."`
}

// Upstream defaults.
const (
	DefaultUpstreamTimeoutMS      = 30000
	DefaultUpstreamMaxResultBytes = 1 << 20
	UpstreamTrustUntrusted        = "untrusted"
)

// UpstreamIDRE is the pattern of an upstream id: no '.', so the
// capability mcp.<id>.<tool> splits one way only.
var UpstreamIDRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// Upstream returns the configured upstream with that id.
func (c *Config) Upstream(id string) (Upstream, bool) {
	i := slices.IndexFunc(c.Upstreams, func(u Upstream) bool { return u.ID == id })
	if i < 0 {
		return Upstream{}, false
	}
	return c.Upstreams[i], true
}

// Stdio reports whether u is a stdio server.
func (u Upstream) Stdio() bool { return len(u.Command) > 0 }

func (c *Config) resolveUpstreamPaths() {
	for i := range c.Upstreams {
		u := &c.Upstreams[i]
		if u.Trust == "" {
			u.Trust = UpstreamTrustUntrusted
		}
		if u.TimeoutMS == 0 {
			u.TimeoutMS = DefaultUpstreamTimeoutMS
		}
		if u.MaxResultBytes == 0 {
			u.MaxResultBytes = DefaultUpstreamMaxResultBytes
		}
		for j, p := range u.ReadOnly {
			if !filepath.IsAbs(p) {
				u.ReadOnly[j] = filepath.Join(c.dir, p)
			}
		}
		for _, m := range []map[string]TokenSource{u.Env, u.Headers} {
			for k, t := range m {
				if t.File != "" && !filepath.IsAbs(t.File) {
					t.File = filepath.Join(c.dir, t.File)
					m[k] = t
				}
			}
		}
	}
}

// checkUpstreams validates the upstreams section. A stdio upstream that
// names hosts is refused: the sandbox has no network, and the
// connect-time checked egress for sandboxed upstreams is not built yet;
// refusing is the fail-closed answer (never a silently opened network).
func (c *Config) checkUpstreams() error {
	seen := map[string]bool{}
	for i, u := range c.Upstreams {
		at := func(field string, err error) error {
			return c.at(fmt.Sprintf("$.upstreams[%d]%s", i, field), err)
		}
		if !UpstreamIDRE.MatchString(u.ID) {
			return at(".id", fmt.Errorf("upstream id %q (want %s): %w", u.ID, UpstreamIDRE, ErrInvalid))
		}
		if seen[u.ID] {
			return at(".id", fmt.Errorf("duplicate upstream id %q: %w", u.ID, ErrInvalid))
		}
		seen[u.ID] = true
		if u.Stdio() == (u.URL != "") {
			return at("", fmt.Errorf("upstream %q: set exactly one of command (stdio) or url (streamable HTTP): %w", u.ID, ErrInvalid))
		}
		if u.Trust != UpstreamTrustUntrusted {
			return at(".trust", fmt.Errorf("upstream %q: trust %q (only untrusted: what an upstream says is always fenced): %w", u.ID, u.Trust, ErrInvalid))
		}
		if u.Stdio() {
			if len(u.Hosts) > 0 {
				return at(".hosts", fmt.Errorf("upstream %q: a stdio upstream runs in the sandbox without network; egress for sandboxed upstreams is not supported yet, so hosts cannot be granted: %w", u.ID, ErrInvalid))
			}
			if len(u.Headers) > 0 {
				return at(".headers", fmt.Errorf("upstream %q: headers are for url upstreams; a stdio upstream takes env: %w", u.ID, ErrInvalid))
			}
			if u.Command[0] == "" || strings.IndexByte(strings.Join(u.Command, ""), 0) >= 0 {
				return at(".command", fmt.Errorf("upstream %q: empty program or NUL byte: %w", u.ID, ErrInvalid))
			}
		} else {
			p, err := url.Parse(u.URL)
			if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" || p.User != nil {
				return at(".url", fmt.Errorf("upstream %q: url must be an absolute http(s) URL without user info: %w", u.ID, ErrInvalid))
			}
			if len(u.Env) > 0 || len(u.ReadOnly) > 0 || len(u.Hosts) > 0 {
				return at("", fmt.Errorf("upstream %q: env, read_only and hosts are for command upstreams: %w", u.ID, ErrInvalid))
			}
		}
		for name, t := range u.Env {
			if !envNameRE.MatchString(name) {
				return at(".env."+name, fmt.Errorf("environment variable name %q: %w", name, ErrInvalid))
			}
			if (t.Env == "") == (t.File == "") {
				return at(".env."+name, fmt.Errorf("set exactly one of env or file: %w", ErrInvalid))
			}
		}
		for name, t := range u.Headers {
			if !headerNameRE.MatchString(name) {
				return at(".headers."+name, fmt.Errorf("header name %q: %w", name, ErrInvalid))
			}
			if (t.Env == "") == (t.File == "") {
				return at(".headers."+name, fmt.Errorf("set exactly one of env or file: %w", ErrInvalid))
			}
		}
		for j, p := range u.ReadOnly {
			if !filepath.IsAbs(p) {
				return at(fmt.Sprintf(".read_only[%d]", j), fmt.Errorf("path %q: %w", p, ErrInvalid))
			}
		}
	}
	return nil
}
