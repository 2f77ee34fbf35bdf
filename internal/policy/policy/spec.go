package policy

import (
	"errors"

	"github.com/airlock-dev/airlock/internal/policy/limits"
)

// Effect is the outcome of a decision.
type Effect string

// The effects a decision can have, in precedence order deny > require_approval > allow.
const (
	Deny            Effect = "deny"
	RequireApproval Effect = "require_approval"
	Allow           Effect = "allow"
)

func (e Effect) valid() bool { return e == Deny || e == RequireApproval || e == Allow }

// LimitsSpec is the limits section of a policy; it is defined once, in
// package limits, which enforces it.
type LimitsSpec = limits.Spec

// RateSpec is one token-bucket rate limit (see package limits).
type RateSpec = limits.RateSpec

// Spec is one named policy as written in the configuration file under
// policies:. Fields are matched by their json tags, which also generate the
// JSON Schema.
type Spec struct {
	Description string         `json:"description,omitempty" jsonschema:"description=What this policy is for (shown by policy explain)."`
	Extends     string         `json:"extends,omitempty" jsonschema:"description=Name of the parent policy. A child can only restrict its parent: its allows must fall within the parent's and its limits must be at most the parent's."`
	Allow       []string       `json:"allow,omitempty" jsonschema:"description=Capability patterns that may run (e.g. pool.* or pipeline.run:report_*). '*' matches any run of characters. No match means deny. A child that lists none inherits its parent's."`
	Deny        []string       `json:"deny,omitempty" jsonschema:"description=Capability patterns that never run; a deny match always wins. A child adds to its parent's."`
	Rules       []RuleSpec     `json:"rules,omitempty" jsonschema:"description=Conditional rules (expr expressions) evaluated in order after the parent's rules."`
	Network     NetworkSpec    `json:"network,omitempty" jsonschema:"description=Hosts and schemes comm.* capabilities may reach."`
	Filesystem  FilesystemSpec `json:"filesystem,omitempty" jsonschema:"description=Paths pipelines may read and write."`
	Limits      LimitsSpec     `json:"limits,omitempty" jsonschema:"description=Per-session and per-call resource limits."`
	// MCPAdditionalArguments: see additional.go.
	MCPAdditionalArguments []string `json:"mcp_additional_arguments,omitempty" jsonschema:"description=mcp.* capability patterns whose needs may carry argument keys the tool's pinned input schema does not name\\, where that schema explicitly allows other keys (additionalProperties not false or patternProperties). Default none: such a key is refused (UPSTREAM_ARGUMENTS_INVALID). A child may only narrow its parent's list."`
}

// RuleSpec is one conditional rule.
type RuleSpec struct {
	ID          string `json:"id" jsonschema:"description=Unique id (letters digits _ . -) recorded in every decision the rule makes."`
	Capability  string `json:"capability" jsonschema:"description=Capability pattern the rule applies to (e.g. comm.fetch or pool.*)."`
	When        string `json:"when,omitempty" jsonschema:"description=expr condition over the call (args tool capability tier session principal role phase now url pool path query). Empty means always."`
	Effect      Effect `json:"effect" jsonschema:"enum=allow,enum=deny,enum=require_approval,description=What the rule does when its condition holds. deny and require_approval only tighten; allow acts as an allow pattern scoped by the condition."`
	Description string `json:"description,omitempty" jsonschema:"description=Why the rule exists; appended to the decision's reason."`
}

// NetworkSpec is the network section: where comm.* calls may go.
type NetworkSpec struct {
	AllowHosts   []string `json:"allow_hosts,omitempty" jsonschema:"description=Hosts that may be reached: exact names or IPs or *.domain (subdomains only) or * (any). Empty means none (a child: inherit)."`
	DenyHosts    []string `json:"deny_hosts,omitempty" jsonschema:"description=Hosts that may never be reached; overrides allow_hosts. A child adds to its parent's."`
	AllowSchemes []string `json:"allow_schemes,omitempty" jsonschema:"description=URL schemes that may be used (default [https])."`
	AllowPrivate []string `json:"allow_private,omitempty" jsonschema:"description=CIDR prefixes of private loopback or link-local addresses that may be reached (default none)."`
}

// FilesystemSpec is the filesystem section: what pipelines may touch.
type FilesystemSpec struct {
	Read  []string `json:"read,omitempty" jsonschema:"description=Paths (and everything under them) pipelines may read. Empty means none (a child: inherit)."`
	Write []string `json:"write,omitempty" jsonschema:"description=Paths (and everything under them) pipelines may write. Empty means none (a child: inherit)."`
}

// Sentinel errors. Load-time problems wrap one of these inside a
// *FieldError (from Compile) or a *yamlfile.Error (from CompileSet and
// LoadFile), so callers use errors.Is.
var (
	// ErrInvalidPattern reports a capability pattern that cannot be used.
	ErrInvalidPattern = errors.New("invalid capability pattern")
	// ErrInvalidRule reports a rule with a bad or duplicate id, a missing
	// capability or an unknown effect.
	ErrInvalidRule = errors.New("invalid rule")
	// ErrExpression reports a when condition that does not compile: a syntax
	// error, an unknown identifier or a result that is not a bool.
	ErrExpression = errors.New("invalid condition")
	// ErrInvalidName reports a policy name that cannot be used.
	ErrInvalidName = errors.New("invalid policy name")
	// ErrUnknownParent reports extends naming a policy that does not exist.
	ErrUnknownParent = errors.New("unknown parent policy")
	// ErrCycle reports policies that extend each other in a loop.
	ErrCycle = errors.New("inheritance cycle")
	// ErrWidens reports a child policy that allows more than its parent
	// (limits.ErrWidens is the same sentinel).
	ErrWidens = limits.ErrWidens
	// ErrInvalidNetwork reports a bad host pattern, scheme or CIDR.
	ErrInvalidNetwork = errors.New("invalid network entry")
	// ErrInvalidPath reports a bad filesystem entry.
	ErrInvalidPath = errors.New("invalid filesystem path")
	// ErrNoPolicies reports a policy file without a policies section.
	ErrNoPolicies = errors.New("no policies")

	// ErrNetworkDenied is wrapped by every refusal of CheckURL and CheckIP.
	ErrNetworkDenied = errors.New("network access denied by policy")
	// ErrPathDenied is wrapped by every refusal of CheckRead and CheckWrite.
	ErrPathDenied = errors.New("path denied by policy")
)

// FieldError is a load-time problem with one field of a Spec. Field is a
// YAML path relative to the policy (".rules[2].when"), so a caller holding
// the file turns it into a line with yamlfile.At; CompileSet does that.
type FieldError struct {
	Policy string
	Field  string
	Err    error
}

func (e *FieldError) Error() string {
	if e.Policy == "" {
		return "policy" + e.Field + ": " + e.Err.Error()
	}
	return "policy " + e.Policy + e.Field + ": " + e.Err.Error()
}

func (e *FieldError) Unwrap() error { return e.Err }
