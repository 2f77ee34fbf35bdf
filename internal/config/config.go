// Package config is Airlock's configuration file: its Go types (which also
// generate schemas/config.schema.json), strict loading with file:line errors,
// cross-reference checks, and the embedded demo configuration.
//
// Loading fails closed: an unknown key, a type error, a role naming a policy
// or pool that does not exist, or a policy that does not compile stops the
// load with the file name and line. Nothing is guessed or defaulted silently
// except the documented defaults in [Defaults].
package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/yamlfile"
	"github.com/airlock-dev/airlock/internal/policy/policy"
	"github.com/airlock-dev/airlock/sources"
)

// Phases a session can be in (see package phasegate).
const (
	PhasePlanning  = "planning"
	PhaseExecution = "execution"
)

// Config is the whole configuration file.
type Config struct {
	Server      Server                 `json:"server,omitempty" jsonschema:"description=Server-wide settings."`
	Pools       []sources.PoolConfig   `json:"pools" jsonschema:"description=Read-only source pools the agent may be bound to."`
	Policies    map[string]policy.Spec `json:"policies" jsonschema:"description=Named policies; a role names one. A policy may extend another and only restrict it."`
	Roles       map[string]Role        `json:"roles" jsonschema:"description=Roles: which policy and pools a principal gets and how it authenticates."`
	Transports  Transports             `json:"transports,omitempty" jsonschema:"description=Per-transport settings."`
	Pipelines   []Pipeline             `json:"pipelines,omitempty" jsonschema:"description=Commands run_pipeline may run in the sandbox."`
	Comm        Comm                   `json:"comm,omitempty" jsonschema:"description=Executors of approved external needs (declare_need)."`
	Upstreams   []Upstream             `json:"upstreams,omitempty" jsonschema:"description=Existing MCP servers behind Airlock: their tools are reached only through declare_need (comm.mcp)\\, as capabilities mcp.<id>.<tool>\\, in operator-approved definitions."`
	Audit       Audit                  `json:"audit,omitempty" jsonschema:"description=How the audit trail is anchored outside its database (witness checkpoints)."`
	Credentials []Credential           `json:"credentials,omitempty" jsonschema:"description=Secrets injected only at the boundary: as HTTP headers for named hosts in comm.fetch\\, as environment variables of named pipelines (README: Credentials)."`
	Tracing     Tracing                `json:"tracing,omitempty" jsonschema:"description=OpenTelemetry traces of governed calls (README: Tracing)."`
	Notify      Notify                 `json:"notifications,omitempty" jsonschema:"description=Who is told when a declared need waits for an operator or expires undecided."`
	Store       string                 `json:"store,omitempty" jsonschema:"description=Where the shared state lives: empty for the SQLite file in the state directory (the default)\\, or a postgres:// URL for several instances on one PostgreSQL database. No password here: use PGPASSWORD or a .pgpass file. AIRLOCK_STORE overrides it."`

	// UpstreamSessions bounds the warm upstream sessions (issue 23).
	UpstreamSessions UpstreamSessions `json:"upstream_sessions,omitempty" jsonschema:"description=Bounds on the warm sessions of upstream MCP servers (one process or MCP session per upstream and context by default)."`

	// file is where the config came from (for errors); data its bytes (for
	// turning YAML paths into lines); dir resolves relative paths.
	file string
	data []byte
	dir  string
}

// Server holds server-wide settings.
type Server struct {
	Name           string `json:"name,omitempty" jsonschema:"description=Name reported to MCP clients (default airlock)."`
	MaxOutputBytes int    `json:"max_output_bytes,omitempty" jsonschema:"minimum=0,maximum=578901,description=Largest tool output sent to the agent before truncation (default 262144; at most 578901 so that one answer fits the 10 MiB message buffer of the TypeScript SDK's stdio client)."`
	MaxReadBytes   int64  `json:"max_read_bytes,omitempty" jsonschema:"minimum=0,description=Largest page read_pool_file returns; at most max_output_bytes (default 65536 or max_output_bytes if smaller)."`
	MaxFileBytes   int64  `json:"max_file_bytes,omitempty" jsonschema:"minimum=0,description=Largest pool file that may be read at all (default 1073741824)."`
	// MaxProvenanceBytes caps the content text a context keeps for
	// tracing where a need's values came from (issue 22).
	MaxProvenanceBytes int64 `json:"max_provenance_bytes,omitempty" jsonschema:"minimum=0,description=Content text each context keeps to trace where a declared need's values came from (default 4194304); over it the oldest lose their text and values no source explains count as untrusted."`
	// Output pools' retention (issue 24 item 5).
	MaxOutputPools       int   `json:"max_output_pools,omitempty" jsonschema:"minimum=0,maximum=1000,description=Pipeline output pools each context keeps listed\\, newest first after the configured pools (default 32); older ones stop being listed (their files stay in the state directory)."`
	OutputPoolTTLSeconds int64 `json:"output_pool_ttl_seconds,omitempty" jsonschema:"minimum=0,description=Seconds a pipeline output pool stays listed after its run published it (default 0: no age limit)."`
}

// Role is what a principal is allowed: a policy, a set of pools, a phase to
// start in, and the tokens that authenticate it over HTTP.
type Role struct {
	Policy       string      `json:"policy" jsonschema:"description=Name of the policy in policies."`
	Pools        []string    `json:"pools,omitempty" jsonschema:"description=Pool ids bound to this role's sessions (frozen for the session)."`
	InitialPhase string      `json:"initial_phase,omitempty" jsonschema:"enum=planning,enum=execution,description=Phase a new session starts in (default planning)."`
	Tokens       []RoleToken `json:"tokens,omitempty" jsonschema:"description=Bearer tokens for HTTP clients of this role. Never written in the config itself."`
	// Approver says who may approve this role's require_approval needs
	// besides an operator. Empty means: the person at the client over stdio
	// (where the client is the user's own program), an operator only over
	// HTTP (where the client may be the agent itself).
	Approver string `json:"approver,omitempty" jsonschema:"enum=operator,enum=client,description=Who approves require_approval needs: operator (CLI or console only) or client (also the person at the client\\, through elicitation). Default: client on stdio\\, operator over HTTP."`
}

// Approvers.
const (
	ApproverOperator = "operator"
	ApproverClient   = "client"
)

// ApproverFor is who approves the role's needs on a transport: the
// configured approver, else client on stdio and operator on anything else.
func (r Role) ApproverFor(transport string) string {
	if r.Approver != "" {
		return r.Approver
	}
	if transport == "stdio" || transport == "inprocess" {
		return ApproverClient
	}
	return ApproverOperator
}

// RoleToken is one bearer token of a role: where it is read from, and
// the contexts its calls may run in. A child context restricts a client
// only if the client cannot leave its handle out, so a token handed to a
// restricted agent is bound (context) or must name one (require_context)
// (issue 26 item 2).
type RoleToken struct {
	Env  string `json:"env,omitempty" jsonschema:"description=Environment variable holding the token."`
	File string `json:"file,omitempty" jsonschema:"description=File holding the token (trailing newline ignored)."`
	// inline: its keys sit beside env and file (the YAML decoder inlines
	// an embedded struct only when told; encoding/json always does).
	ContextBinding `yaml:",inline"`
}

// Source is where the token is read from.
func (t RoleToken) Source() TokenSource { return TokenSource{Env: t.Env, File: t.File} }

// ContextBinding ties a credential to the contexts its calls run in (see
// contexts.Binding); the zero value allows the principal's default context
// and any child a handle names.
type ContextBinding struct {
	Context        string `json:"context,omitempty" jsonschema:"pattern=^ctx_[0-9a-f]{24}$,description=Id of the context (airlock context list) this credential is bound to: a request without an Airlock-Context header runs in it\\, and a header may name only it or a context under it (else 403 CONTEXT_OUTSIDE_BINDING)."`
	RequireContext bool   `json:"require_context,omitempty" jsonschema:"description=Never run this credential's calls in a default context: a request must name a child context with the Airlock-Context header (else 403 CONTEXT_REQUIRED)."`
}

// contextIDPattern is what context ids look like (contexts.DefaultID, and
// the operator's child ids): a typo in a binding fails at load, not as a
// CONTEXT_INVALID on every request.
var contextIDPattern = regexp.MustCompile(`^ctx_[0-9a-f]{24}$`)

func (b ContextBinding) checkContext() error {
	if b.Context != "" && !contextIDPattern.MatchString(b.Context) {
		return fmt.Errorf("context %q is not a context id (ctx_ and 24 hex digits, as airlock context list shows): %w", b.Context, ErrInvalid)
	}
	return nil
}

// TokenSource names where a bearer token is read from: an environment
// variable or a file. Exactly one must be set. The token itself never appears
// in the configuration, the logs or the audit trail.
type TokenSource struct {
	Env  string `json:"env,omitempty" jsonschema:"description=Environment variable holding the token."`
	File string `json:"file,omitempty" jsonschema:"description=File holding the token (trailing newline ignored)."`
}

// Read returns the secret: the variable's value ("" when unset), or the
// file's content without its trailing newline. A file error names the file
// by its base name only: the agent-facing and logged text carries no host
// path.
func (s TokenSource) Read() (string, error) {
	if s.Env != "" {
		return os.Getenv(s.Env), nil
	}
	b, err := os.ReadFile(s.File)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", filepath.Base(s.File), err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// check wants exactly one of Env and File: a token source with both
// would leave which one counts to the reader.
func (s TokenSource) check() error {
	if (s.Env == "") == (s.File == "") {
		return fmt.Errorf("set exactly one of env or file: %w", ErrInvalid)
	}
	return nil
}

// Defaults.
const (
	DefaultServerName     = "airlock"
	DefaultMaxOutputBytes = 256 << 10
	DefaultMaxReadBytes   = 64 << 10
	DefaultMaxFileBytes   = 1 << 30
	DefaultStdioRole      = "local"
)

// ClientMessageBytes is the largest JSON-RPC message common MCP clients
// accept: the TypeScript SDK's stdio transport closes the connection on a
// line over 10 MiB (STDIO_DEFAULT_MAX_BUFFER_SIZE).
const ClientMessageBytes = 10 << 20

// answerExpansion is how much larger than max_output_bytes one answer can be
// once encoded: untrusted text travels up to three times (content, and
// structuredContent's untrusted_content and content) and JSON may spell one
// byte as six (\u003c for '<', \u0000 for a control byte).
const answerExpansion = 3 * 6

// envelopeReserve is left in a message for what surrounds the page: the
// JSON-RPC envelope, the fence markers and notice, the result's metadata.
const envelopeReserve = 64 << 10

// MaxOutputPools is the largest max_output_pools accepted: each listed
// output pool is open in every process serving its context.
const MaxOutputPools = 1000

// MaxOutputBytes is the largest max_output_bytes accepted (578901): any
// answer within it fits in ClientMessageBytes.
const MaxOutputBytes = (ClientMessageBytes - envelopeReserve) / answerExpansion

// Errors callers can test for.
var (
	ErrUnknownReference = errors.New("unknown reference")
	ErrInvalid          = errors.New("invalid value")
)

// Load reads and checks the configuration file at path. Relative paths in
// it resolve against the file's directory.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("resolving config path: %w", err)
	}
	return Parse(path, data, filepath.Dir(abs))
}

// Parse checks data, read from file name, resolving relative paths against dir.
func Parse(name string, data []byte, dir string) (*Config, error) {
	c := &Config{file: name, data: data, dir: dir}
	if err := yamlfile.Decode(name, data, c); err != nil {
		return nil, err
	}
	c.applyDefaults()
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// File is the name the configuration was loaded from.
func (c *Config) File() string { return c.file }

// Bytes is the configuration as loaded, for tools that map YAML paths to lines.
func (c *Config) Bytes() []byte { return c.data }

func (c *Config) applyDefaults() {
	if c.Server.Name == "" {
		c.Server.Name = DefaultServerName
	}
	if c.Server.MaxOutputBytes == 0 {
		c.Server.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.Server.MaxReadBytes == 0 {
		c.Server.MaxReadBytes = min(DefaultMaxReadBytes, int64(c.Server.MaxOutputBytes))
	}
	if c.Server.MaxFileBytes == 0 {
		c.Server.MaxFileBytes = DefaultMaxFileBytes
	}
	if c.Transports.Stdio.Role == "" {
		c.Transports.Stdio.Role = DefaultStdioRole
	}
	c.Transports.applyDefaults()
	if o := c.Transports.HTTP.OAuth; o != nil {
		o.applyDefaults(c.Server.Name)
	}
	for i := range c.Pools {
		p := &c.Pools[i]
		p.Path = c.rel(p.Path)
		if p.Trust == "" {
			p.Trust = sources.Untrusted
		}
	}
	c.resolveCommPaths()
	c.resolveUpstreamPaths()
	c.resolveNotifyPaths()
	c.resolveAuditPaths()
	c.resolveCredentialPaths()
	c.relTokenFiles(c.Tracing.Headers)
	for i := range c.Pipelines {
		c.relList(c.Pipelines[i].Files)
	}
	for name, r := range c.Roles {
		if r.InitialPhase == "" {
			r.InitialPhase = PhasePlanning
			c.Roles[name] = r
		}
		for i, t := range r.Tokens {
			r.Tokens[i].File = c.rel(t.File)
		}
	}
}

// rel makes a path the config names, relative to the config file,
// absolute; "" (unset) stays "".
func (c *Config) rel(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(c.dir, p)
}

// relList makes each relative entry of a path list (read_only, files)
// absolute, in place.
func (c *Config) relList(ps []string) {
	for i, p := range ps {
		if !filepath.IsAbs(p) {
			ps[i] = filepath.Join(c.dir, p)
		}
	}
}

// relTokenFiles makes the files of token sources absolute (see rel).
func (c *Config) relTokenFiles(m map[string]TokenSource) {
	for k, t := range m {
		t.File = c.rel(t.File)
		m[k] = t
	}
}

func (c *Config) at(path string, err error) error { return yamlfile.At(c.file, c.data, path, err) }

// itemAt is at for the fields of entry i of the list at path ("$.pipelines"):
// the returned func names the field relative to the entry (".argv", or ""
// for the entry itself).
func (c *Config) itemAt(list string, i int) func(field string, err error) error {
	return func(field string, err error) error { return c.at(fmt.Sprintf("%s[%d]%s", list, i, field), err) }
}

// checkName checks the name of one entry of a list whose entries are
// referred to by name: it matches re and no earlier entry has it. seen
// holds the earlier names; checkName adds this one. what says which name
// it is ("pipeline name").
func checkName(seen map[string]bool, re *regexp.Regexp, what, name string) error {
	if !re.MatchString(name) || seen[name] {
		return fmt.Errorf("%s %q must match %s and be unique: %w", what, name, re, ErrInvalid)
	}
	seen[name] = true
	return nil
}

// checkKey checks the name of an entry of a mapping whose keys are names
// (a comm.query database, a pipeline parameter): it must match nameRE;
// the mapping keeps it unique. what says which name it is ("database").
func checkKey(what, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%s name %q: %w", what, name, ErrInvalid)
	}
	return nil
}

// checkRole refuses a reference to a role the roles section does not
// define: every section that names a role (transports, oauth role
// mappings, credentials) checks it here.
func (c *Config) checkRole(role string) error {
	if _, ok := c.Roles[role]; !ok {
		return fmt.Errorf("role %q: %w", role, ErrUnknownReference)
	}
	return nil
}

// check validates cross references; every error names the YAML node.
// The sections are checked in this order and the first error is returned.
func (c *Config) check() error {
	if err := c.checkServer(); err != nil {
		return err
	}
	pools, err := c.checkPools()
	if err != nil {
		return err
	}
	for _, check := range []func() error{
		func() error { return c.checkPipelines(pools) },
		c.checkComm,
		c.checkUpstreams,
		c.checkUpstreamSessions,
		c.checkAudit,
		c.checkStore,
		c.checkPolicies,
		func() error { return c.checkRoles(pools) },
		c.checkNotify,
		c.checkCredentials,
		c.checkTracing,
		c.checkTransports,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) checkServer() error {
	// A read_pool_file page larger than the output limit would be cut by
	// the runner while next_offset advanced past the cut: a client paging
	// by next_offset would silently skip bytes (issue 10 item 11).
	// A page whose answer outgrows a client's message buffer does not fail
	// one call: the TypeScript SDK closes the whole stdio connection.
	if c.Server.MaxOutputBytes > MaxOutputBytes {
		return c.at("$.server.max_output_bytes", fmt.Errorf("max_output_bytes %d is larger than %d: one answer can be %d times that (plus its envelope) once JSON-encoded, "+
			"and MCP clients such as the TypeScript SDK (stdio) drop the connection on a message over %d bytes: %w",
			c.Server.MaxOutputBytes, MaxOutputBytes, answerExpansion, ClientMessageBytes, ErrInvalid))
	}
	if c.Server.MaxReadBytes > int64(c.Server.MaxOutputBytes) {
		return c.at("$.server.max_read_bytes", fmt.Errorf("max_read_bytes %d is larger than max_output_bytes %d (a page must fit in one answer): %w",
			c.Server.MaxReadBytes, c.Server.MaxOutputBytes, ErrInvalid))
	}
	if n := c.Server.MaxOutputPools; n < 0 || n > MaxOutputPools {
		return c.at("$.server.max_output_pools", fmt.Errorf("max_output_pools %d is outside 0..%d: %w", n, MaxOutputPools, ErrInvalid))
	}
	if c.Server.OutputPoolTTLSeconds < 0 {
		return c.at("$.server.output_pool_ttl_seconds", fmt.Errorf("output_pool_ttl_seconds %d is negative: %w", c.Server.OutputPoolTTLSeconds, ErrInvalid))
	}
	return nil
}

// checkPools validates the pools and returns their ids, which pipelines
// and roles refer to.
func (c *Config) checkPools() (map[string]bool, error) {
	pools := map[string]bool{}
	for i, p := range c.Pools {
		if err := c.checkReaders(fmt.Sprintf("$.pools[%d].readers", i), p.Readers); err != nil {
			return nil, err
		}
		if err := p.Validate(); err != nil {
			return nil, c.at(fmt.Sprintf("$.pools[%d]", i), err)
		}
		if pools[p.ID] {
			return nil, c.at(fmt.Sprintf("$.pools[%d].id", i), fmt.Errorf("duplicate pool id %q: %w", p.ID, ErrInvalid))
		}
		pools[p.ID] = true
	}
	return pools, nil
}

func (c *Config) checkPolicies() error {
	if len(c.Policies) == 0 {
		return c.at("$", fmt.Errorf("no policies: %w", ErrInvalid))
	}
	_, err := c.PolicySet()
	return err
}

func (c *Config) checkRoles(pools map[string]bool) error {
	for _, name := range slices.Sorted(maps.Keys(c.Roles)) {
		r := c.Roles[name]
		base := "$.roles." + name
		if _, ok := c.Policies[r.Policy]; !ok {
			return c.at(base+".policy", fmt.Errorf("policy %q: %w", r.Policy, ErrUnknownReference))
		}
		for i, id := range r.Pools {
			if !pools[id] {
				return c.at(fmt.Sprintf("%s.pools[%d]", base, i), fmt.Errorf("pool %q: %w", id, ErrUnknownReference))
			}
		}
		if r.InitialPhase != PhasePlanning && r.InitialPhase != PhaseExecution {
			return c.at(base+".initial_phase", fmt.Errorf("phase %q (want planning or execution): %w", r.InitialPhase, ErrInvalid))
		}
		if r.Approver != "" && r.Approver != ApproverOperator && r.Approver != ApproverClient {
			return c.at(base+".approver", fmt.Errorf("approver %q (want operator or client): %w", r.Approver, ErrInvalid))
		}
		for i, t := range r.Tokens {
			if err := t.Source().check(); err != nil {
				return c.at(fmt.Sprintf("%s.tokens[%d]", base, i), err)
			}
			if err := t.checkContext(); err != nil {
				return c.at(fmt.Sprintf("%s.tokens[%d].context", base, i), err)
			}
		}
	}
	return nil
}

// PolicySet compiles the named policies.
func (c *Config) PolicySet() (*policy.Set, error) {
	return policy.CompileSet(c.file, c.data, c.Policies)
}
