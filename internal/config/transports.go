package config

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/origin"
)

// Transports holds per-transport settings.
type Transports struct {
	Stdio StdioTransport `json:"stdio,omitempty"`
	HTTP  HTTPTransport  `json:"http,omitempty"`
}

// StdioTransport configures `airlock serve` without --http.
type StdioTransport struct {
	Role string `json:"role,omitempty" jsonschema:"description=Role of the local principal on stdio (default local)."`
	// MaxMessageBytes bounds one line on stdin: a bigger one is skipped
	// without being held in memory and refused.
	MaxMessageBytes int64 `json:"max_message_bytes,omitempty" jsonschema:"minimum=0,description=Largest JSON-RPC message accepted on stdin (default 1048576); a bigger one is discarded unread and refused."`
}

// HTTPTransport configures streamable HTTP (/mcp) and SSE (/sse).
type HTTPTransport struct {
	AnonymousRole string `json:"anonymous_role,omitempty" jsonschema:"description=Role for requests without a token. Empty (the default) means such requests get 401. Refused on a non-loopback address unless allow_anonymous_remote is set."`
	// AllowAnonymousRemote forces anonymous_role on a non-loopback bind.
	AllowAnonymousRemote bool `json:"allow_anonymous_remote,omitempty" jsonschema:"description=Serve anonymous_role on a non-loopback address anyway: anyone who can reach the port gets that role. Logged as a warning at start."`
	// MetricsRole may read /metrics from the network (issue 12 item 2).
	MetricsRole string `json:"metrics_role,omitempty" jsonschema:"description=Role whose bearer tokens may read /metrics from any address. Empty (the default): /metrics answers loopback peers only. Never the anonymous role from the network."`
	// ConsoleRole's static tokens log in to the web console at /console
	// (issue 12 item 1); empty: no console.
	ConsoleRole string `json:"console_role,omitempty" jsonschema:"description=Role whose static bearer tokens log in to the web console at /console (the operator's approvals\\, audit browser\\, contexts\\, pipeline runs and kill switch). Empty (the default): no console. Use a role of its own: its tokens are admin credentials. Never the anonymous role."`
	// ConsoleSessionSeconds bounds a console login.
	ConsoleSessionSeconds int   `json:"console_session_seconds,omitempty" jsonschema:"minimum=0,description=Seconds a console login lasts before the admin must log in again (default 3600). Sessions live in the memory of the instance that issued them."`
	MaxBodyBytes          int64 `json:"max_body_bytes,omitempty" jsonschema:"minimum=0,description=Largest request body accepted (default 1048576); larger gets 413."`
	// MaxSessionsPerPrincipal caps open Mcp-Session-Ids per principal.
	MaxSessionsPerPrincipal int `json:"max_sessions_per_principal,omitempty" jsonschema:"minimum=0,description=Open streamable HTTP sessions one principal may hold (default 16); an initialize beyond it closes the principal's least recently used session."`
	// SessionIdleTimeoutSeconds closes sessions nobody used for that long.
	SessionIdleTimeoutSeconds int64 `json:"session_idle_timeout_seconds,omitempty" jsonschema:"minimum=0,description=Seconds after which an unused streamable HTTP session is closed (default 1800)."`

	// AllowedOrigins is the browser-origin allow-list (origin.List).
	AllowedOrigins []string `json:"allowed_origins,omitempty" jsonschema:"description=Origins a browser request may come from: exact origins (https://app.example) and the keyword loopback (any http(s) origin on localhost/127.0.0.0/8/::1). Default [loopback]. A request with another Origin gets 403; one without an Origin header (not a browser) is allowed."`
	// Connection bounds (edge.Tracker).
	MaxConnections               int `json:"max_connections,omitempty" jsonschema:"minimum=0,description=Open connections at most (default 1024). At the bound the oldest connection that has not authenticated is closed."`
	MaxUnauthenticatedPerAddress int `json:"max_unauthenticated_per_address,omitempty" jsonschema:"minimum=0,description=Connections one remote address may hold before authenticating (default 64)."`
	// Proxies exempts load balancers from the per-address bound (edge.ConnLimits).
	Proxies                  []string `json:"proxies,omitempty" jsonschema:"description=Addresses (an IP or a CIDR prefix) of the load balancers and reverse proxies in front of Airlock. Each carries many clients' connections\\, so max_unauthenticated_per_address does not apply to them (max_connections still does). Without it a proxy that opens a connection per request has its connections closed under load and answers 502."`
	ReadHeaderTimeoutSeconds int      `json:"read_header_timeout_seconds,omitempty" jsonschema:"minimum=0,description=Seconds a client has to send a request's headers (default 10); also how long a new connection may stay silent."`
	BodyReadTimeoutSeconds   int      `json:"body_read_timeout_seconds,omitempty" jsonschema:"minimum=0,description=Seconds a client has to send a request body once its headers are in (default 30); slower gets 408."`
	WriteTimeoutSeconds      int      `json:"write_timeout_seconds,omitempty" jsonschema:"minimum=0,description=Seconds a POST's response may take to write, tool call included (default 900). Streams opened by GET are not bounded."`
	IdleTimeoutSeconds       int      `json:"idle_timeout_seconds,omitempty" jsonschema:"minimum=0,description=Seconds a keep-alive connection may sit idle between requests (default 120)."`
	// MaxReadsInFlight bounds the quick governed calls one process runs
	// at once over streamable HTTP (package admission).
	MaxReadsInFlight          int `json:"max_reads_in_flight,omitempty" jsonschema:"minimum=0,description=Quick governed calls (list_pools\\, read_pool_file\\, pool resources\\, completions\\, unknown tools) one process runs at once over streamable HTTP (default 64); more wait for a slot at the edge\\, holding little memory\\, and a request whose client goes away while it waits never runs. declare_need and run_pipeline\\, which may take seconds\\, are not counted\\, so they never hold a quick call back. Read at start."`
	RefusalAuditWindowSeconds int `json:"refusal_audit_window_seconds,omitempty" jsonschema:"minimum=0,description=Refusals at the edge (401, 403, 413, malformed messages, connection limits) are audited once per remote address and cause at once, then as one record with a count per window of this many seconds (default 10)."`

	// OAuth accepts OAuth 2.1 access tokens beside the roles' static
	// tokens (internal/config/oauth.go, package oauth).
	OAuth *OAuth `json:"oauth,omitempty" jsonschema:"description=OAuth 2.1 resource server: protected resource metadata and access tokens from the listed issuers\\, mapped to roles. Static role tokens keep working beside it."`
}

// Transport defaults.
const (
	DefaultMaxBodyBytes                 = 1 << 20
	DefaultMaxMessageBytes              = 1 << 20
	DefaultMaxSessionsPerPrincipal      = 16
	DefaultSessionIdleTimeoutSeconds    = 1800
	DefaultMaxConnections               = 1024
	DefaultMaxUnauthenticatedPerAddress = 64
	DefaultReadHeaderTimeoutSeconds     = 10
	DefaultBodyReadTimeoutSeconds       = 30
	DefaultWriteTimeoutSeconds          = 900
	DefaultIdleTimeoutSeconds           = 120
	DefaultRefusalAuditWindowSeconds    = 10
	DefaultMaxReadsInFlight             = 64
	DefaultConsoleSessionSeconds        = 3600
)

// SessionIdleTimeout is the idle timeout as a duration.
func (h HTTPTransport) SessionIdleTimeout() time.Duration {
	return time.Duration(h.SessionIdleTimeoutSeconds) * time.Second
}

// Seconds turns one of the *Seconds settings into a duration.
func Seconds(n int) time.Duration { return time.Duration(n) * time.Second }

func setDefault[T int | int64](v *T, def T) {
	if *v == 0 {
		*v = def
	}
}

func (t *Transports) applyDefaults() {
	setDefault(&t.Stdio.MaxMessageBytes, DefaultMaxMessageBytes)
	h := &t.HTTP
	setDefault(&h.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&h.MaxSessionsPerPrincipal, DefaultMaxSessionsPerPrincipal)
	setDefault(&h.SessionIdleTimeoutSeconds, DefaultSessionIdleTimeoutSeconds)
	setDefault(&h.MaxConnections, DefaultMaxConnections)
	setDefault(&h.MaxUnauthenticatedPerAddress, DefaultMaxUnauthenticatedPerAddress)
	setDefault(&h.ReadHeaderTimeoutSeconds, DefaultReadHeaderTimeoutSeconds)
	setDefault(&h.BodyReadTimeoutSeconds, DefaultBodyReadTimeoutSeconds)
	setDefault(&h.WriteTimeoutSeconds, DefaultWriteTimeoutSeconds)
	setDefault(&h.IdleTimeoutSeconds, DefaultIdleTimeoutSeconds)
	setDefault(&h.RefusalAuditWindowSeconds, DefaultRefusalAuditWindowSeconds)
	setDefault(&h.MaxReadsInFlight, DefaultMaxReadsInFlight)
	setDefault(&h.ConsoleSessionSeconds, DefaultConsoleSessionSeconds)
}

// ProxyPrefixes are Proxies parsed: an address is a prefix of its full
// length.
func (h HTTPTransport) ProxyPrefixes() ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(h.Proxies))
	for _, s := range h.Proxies {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil || a.Zone() != "" {
				return nil, fmt.Errorf("%q is neither an IP address nor a CIDR prefix: %w", s, ErrInvalid)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func (c *Config) checkTransports() error {
	if err := c.checkRole(c.Transports.Stdio.Role); err != nil {
		return c.at("$.transports.stdio.role", err)
	}
	h := c.Transports.HTTP
	// Each is optional: empty names no role.
	for _, r := range []struct{ field, role string }{
		{"anonymous_role", h.AnonymousRole},
		{"metrics_role", h.MetricsRole},
		{"console_role", h.ConsoleRole},
	} {
		if r.role == "" {
			continue
		}
		if err := c.checkRole(r.role); err != nil {
			return c.at("$.transports.http."+r.field, err)
		}
	}
	// The anonymous role's "token" is no token: a console it could
	// reach would be open to anyone who reaches the port.
	if cr := h.ConsoleRole; cr != "" && cr == h.AnonymousRole {
		return c.at("$.transports.http.console_role", fmt.Errorf("role %q is transports.http.anonymous_role: %w", cr, ErrInvalid))
	}
	if _, err := origin.NewList(c.Transports.HTTP.AllowedOrigins); err != nil {
		return c.at("$.transports.http.allowed_origins", fmt.Errorf("%w: %w", err, ErrInvalid))
	}
	if _, err := h.ProxyPrefixes(); err != nil {
		return c.at("$.transports.http.proxies", err)
	}
	return c.checkOAuth()
}
