package config

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/urlnorm"
)

// Upstream is an existing MCP server put behind Airlock (issue 15). The
// agent never talks to it: its tools are reached through declare_need
// (operation comm.mcp), each as the capability mcp.<id>.<tool>, and only
// in a definition an operator approved (`airlock upstreams review|approve`).
//
// Exactly one of Command (a stdio server, run inside the pipeline sandbox:
// no network unless Hosts names some, and then only through Airlock's
// egress proxy; no state directory) and URL (a streamable HTTP server,
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
	// TokenExchange gets the connection's Authorization on the caller's
	// behalf (credentials_upstream.go).
	TokenExchange *TokenExchange `json:"token_exchange,omitempty" jsonschema:"description=OAuth 2.0 Token Exchange (RFC 8693): each call's Authorization is a token the provider issues for this upstream's audience in exchange for the calling agent's validated access token (on-behalf-of); the agent's own token is never sent. Needs transports.http.oauth."`
	// Hosts a stdio server may reach through the egress proxy (see
	// EgressHosts and package egress).
	Hosts []string `json:"hosts,omitempty" jsonschema:"description=Hosts a stdio server may reach (host or host:port; exact names\\, no wildcards; a port-less entry means 443 for https and 80 for http). Only through Airlock's egress proxy (HTTPS_PROXY/HTTP_PROXY in its environment)\\, and only when the calling policy's network section also allows the host. Without hosts a stdio server has no network at all."`
	Trust string   `json:"trust,omitempty" jsonschema:"enum=untrusted,description=Trust of what the upstream returns; always fenced as untrusted (default untrusted)."`
	// Readers is who may see what the upstream returns (see
	// sources.CheckReader); nil is public. Carried into the provenance
	// labels of its answers.
	Readers []string `json:"readers,omitempty" jsonschema:"minItems=1,maxItems=64,minLength=1,maxLength=256,description=Who may see what the upstream returns (principals\\, e-mail addresses or handles; free strings). Labels of its answers carry them so a policy can refuse to send the content to anyone else (provenance.NAME.readers\\, readable_by). Absent means public."`
	// Warm sessions (issue 23; upstream_sessions.go).
	Sessions                string `json:"sessions,omitempty" jsonschema:"enum=context,enum=principal,enum=shared,description=Who shares one warm session (a stdio server's process\\, an HTTP server's MCP session): context (default: one per runtime context)\\, principal (one per principal and role)\\, or shared (one for every caller of a policy; only with stateless: true)."`
	Stateless               bool   `json:"stateless,omitempty" jsonschema:"description=The operator declares that the server keeps no state between calls that one caller could see of another's; required for sessions: shared."`
	IdleTimeoutSeconds      int64  `json:"idle_timeout_seconds,omitempty" jsonschema:"minimum=0,description=Seconds a warm session may stay unused before it is stopped (default 300)."`
	PinCheckIntervalSeconds int64  `json:"pin_check_interval_seconds,omitempty" jsonschema:"minimum=0,description=Seconds after which a warm session's tool list is listed again before the next call even without notifications/tools/list_changed (default 60)."`
	PinCheck                string `json:"pin_check,omitempty" jsonschema:"enum=every_call,enum=announced,description=When a warm session's tools are listed again before a call: every_call (as a cold session: the strongest check\\, one more round trip per call; the default for url upstreams\\, whose notifications are not ordered with the calls) or announced (when the session starts\\, after the upstream sent notifications/tools/list_changed\\, after pin_check_interval_seconds\\, and every call if the upstream does not declare tools.listChanged; the default for command upstreams)."`
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
		c.relList(u.ReadOnly)
		c.relTokenFiles(u.Env)
		c.relTokenFiles(u.Headers)
	}
}

// checkUpstreams validates the upstreams section.
func (c *Config) checkUpstreams() error {
	seen := map[string]bool{}
	for i, u := range c.Upstreams {
		at := c.itemAt("$.upstreams", i)
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
		if err := c.checkReaders(fmt.Sprintf("$.upstreams[%d].readers", i), u.Readers); err != nil {
			return err
		}
		if u.Trust != UpstreamTrustUntrusted {
			return at(".trust", fmt.Errorf("upstream %q: trust %q (only untrusted: what an upstream says is always fenced): %w", u.ID, u.Trust, ErrInvalid))
		}
		if u.Stdio() {
			if err := c.checkUpstreamHosts(u); err != nil {
				return at(".hosts", err)
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
			if err := t.check(); err != nil {
				return at(".env."+name, err)
			}
		}
		for name, t := range u.Headers {
			if !headerNameRE.MatchString(name) {
				return at(".headers."+name, fmt.Errorf("header name %q: %w", name, ErrInvalid))
			}
			if err := t.check(); err != nil {
				return at(".headers."+name, err)
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

// UpstreamHost is one entry of a stdio upstream's hosts: an exact,
// normalised host name (or IP literal) and a port; Port 0 means the
// defaults, 443 for https (CONNECT) and 80 for http.
type UpstreamHost struct {
	Host string
	Port int
}

// maxUpstreamHosts bounds one upstream's hosts.
const maxUpstreamHosts = 64

// EgressHosts parses u.Hosts (checked at load, so errors cannot happen on
// a loaded config).
func (u Upstream) EgressHosts() ([]UpstreamHost, error) {
	var out []UpstreamHost
	for _, entry := range u.Hosts {
		host, port := entry, 0
		if h, p, err := net.SplitHostPort(entry); err == nil {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
				return nil, fmt.Errorf("hosts entry %q: port: %w", entry, ErrInvalid)
			}
			host, port = h, n
		}
		h, err := urlnorm.Host(host)
		if err != nil {
			return nil, fmt.Errorf("hosts entry %q: an exact host name or IP address (no wildcard, no URL): %w", entry, ErrInvalid)
		}
		out = append(out, UpstreamHost{Host: h, Port: port})
	}
	return out, nil
}

// checkUpstreamHosts refuses hosts that the egress proxy could never
// reach safely: wildcards and URLs (not exact names), and loopback,
// private, link-local or otherwise special addresses and "localhost"
// unless comm.fetch.allow_private names them (the connect-time dialer
// would refuse them anyway; refusing at load says so early).
func (c *Config) checkUpstreamHosts(u Upstream) error {
	if len(u.Hosts) > maxUpstreamHosts {
		return fmt.Errorf("upstream %q: more than %d hosts: %w", u.ID, maxUpstreamHosts, ErrInvalid)
	}
	hosts, err := u.EgressHosts()
	if err != nil {
		return fmt.Errorf("upstream %q: %w", u.ID, err)
	}
	private, err := c.Comm.Fetch.PrivatePrefixes()
	if err != nil {
		return err
	}
	for _, h := range hosts {
		a, err := netip.ParseAddr(h.Host)
		if h.Host == "localhost" || strings.HasSuffix(h.Host, ".localhost") {
			a, err = netip.AddrFrom4([4]byte{127, 0, 0, 1}), nil
		}
		if err != nil {
			continue // a name: its addresses are checked when connecting
		}
		special := a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
			a.IsUnspecified() || a.IsMulticast() || !a.IsGlobalUnicast()
		if special && !slices.ContainsFunc(private, func(p netip.Prefix) bool { return p.Contains(a) }) {
			return fmt.Errorf("upstream %q: host %q is a private, loopback or special address (comm.fetch.allow_private does not name it): %w", u.ID, h.Host, ErrInvalid)
		}
	}
	return nil
}
