// Package toolkit is the contract between the runner and the tools it executes.
//
// A [Tool] is a declaration (name, tier, input type, schema) plus the
// functions the runner calls at its fixed steps: Capability (step 5),
// Precheck (step 8) and Handle (step 9). Tools receive only what the runner
// puts in [Env]; they never see the store, the policy or the transport. The
// package holds types only, so both the runner and the tools package can
// depend on it without either reaching the other's internals.
package toolkit

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/sandbox"
	"github.com/airlock-dev/airlock/internal/policy/policy"
	"github.com/airlock-dev/airlock/sources"
)

// Tier classifies what a tool can do to the world. It comes from the tool's
// declaration, never from the agent.
type Tier string

// Tiers, from least to most consequential.
const (
	TierRead     Tier = "read"     // reads bound data; no side effects
	TierExternal Tier = "external" // reaches outside Airlock (comm.*)
	TierAct      Tier = "act"      // runs code or writes outputs
)

// Tool is one tool the agent can call.
type Tool struct {
	Name        string
	Title       string
	Description string
	Tier        Tier
	// Annotations advertised to MCP clients; every tool sets all three.
	ReadOnly, Destructive, OpenWorld bool

	// InputSchema is generated from the type NewArgs returns (schemas.Reflect).
	InputSchema json.RawMessage
	// OutputSchema describes Structured (success shapes and the refusal).
	OutputSchema json.RawMessage
	// Catalog, if set, specialises the schema and description to a
	// configuration (run_pipeline names the configured pipelines and
	// their parameters). The runner advertises and validates against what
	// it returns, per configuration generation.
	// Upstreams are the approved upstream tools one caller may be shown
	// (declare_need's comm.mcp catalog): the runner calls Catalog with
	// none for the generation's own declaration and validator, and with
	// each caller's list for its tools/list (runner.Session.Tools).
	Catalog func(cfg *config.Config, upstreams []UpstreamTool) (schema json.RawMessage, description string, err error)
	// NewArgs returns a pointer to a zero argument value to decode into.
	NewArgs func() Args

	// Capability names the policy capability of one call, e.g. "pool.read"
	// or "pipeline.run:report". It may depend on the decoded arguments.
	Capability func(args Args) string
	// Precheck verifies preconditions (pool bound, path inside it, ...)
	// before anything executes. Nil means none.
	Precheck func(env *Env, args Args) error
	// Handle executes the call.
	Handle func(ctx context.Context, env *Env, args Args) (*Result, error)
	// Intent, if set, names what a consequential call is about to execute
	// (a declaration created executing; nil: nothing): the runner stores
	// it in the call's started record's commit, before Handle, and hands
	// it to Handle in Env.Intent — the intent durable before the side
	// effect, in one write.
	Intent func(env *Env, args Args) (*declarations.Declaration, error)

	// HandlesApproval lets a policy decision of require_approval reach
	// Handle (env.Decision says so) instead of ending the call: the tool
	// runs the approval flow itself (declare_need).
	HandlesApproval bool
	// Expand, if set, runs right after decoding, before the capability and
	// the policy: it may replace the arguments with what they refer to (a
	// declaration id becomes the stored need), so that the policy judges the
	// real target and not a reference to it.
	Expand func(ctx context.Context, env *Env, args Args) (Args, error)
}

// Targeted is implemented by arguments whose target the policy should see
// under url / query although the arguments nest it (declare_need's
// parameters.url).
type Targeted interface {
	Target() (url, query string)
}

// Args is a tool's decoded arguments. Validate reports the first invalid
// field as a *violation.Error with code INVALID_ARGUMENTS.
type Args interface {
	Validate() error
}

// Session is what a tool may know about the session calling it.
type Session struct {
	ID        string
	ContextID string
	Principal string
	Role      string
	Phase     string
	Transport string
	// Approver is who may approve this session's require_approval needs
	// besides an operator: "operator" (nobody else) or "client" (the person
	// at the client, through elicitation).
	Approver string
}

// Env is everything a tool's functions may use: the runner builds one per
// call and hands it over at steps 8 and 9.
type Env struct {
	Session  Session
	Sources  *sources.Context
	Decision policy.Decision
	// Policy is the session's policy, for checks a tool must make on what it
	// will touch (a pipeline's filesystem paths); the runner has already
	// decided the call itself.
	Policy *policy.Policy
	// Config is the configuration in force (pipeline definitions).
	Config *config.Config
	// Pipelines is the capability to run sandboxed pipelines.
	Pipelines PipelineHost
	// DryRun is set by the phase gate in planning: evaluate and record, but
	// do no external I/O.
	DryRun bool
	// Declarations is the lifecycle of declared needs (approvals included).
	Declarations *declarations.Manager
	// Intent is what Tool.Intent named, stored executing with the call's
	// started record; nil when nothing was.
	Intent *declarations.Declaration
	// Broker performs an approved need's external I/O; nil means none is
	// possible.
	Broker Broker
	// Elicitation is the client's side of a person-in-the-loop question.
	Elicitation Elicitation
	// Approvals mints and redeems the server's approval questions.
	Approvals Approvals
	// Credentials gives a pipeline run the secrets configured for it and
	// the session's role (package credentials); never nil.
	Credentials PipelineCredentials
	// Upstreams checks comm.mcp needs against the pinned definitions.
	Upstreams UpstreamPins
	Now       time.Time
	// Progress reports progress to the client when it asked for it; never nil.
	Progress func(progress, total float64, message string)
}

// PipelineHost is what run_pipeline needs from the runner: the sandbox (the
// only way to start a process) and where runs keep their workspaces.
type PipelineHost struct {
	Sandbox *sandbox.Sandbox
	// Unavailable, when set, is why the sandbox cannot confine a run; the
	// tool then refuses (fail closed).
	Unavailable error
	RunsDir     string
	// Marks is where a run keeps its mark while it lasts (package runmark),
	// so one cut short by the process dying is recorded at the next start.
	Marks string
}

// PipelineCredentials is what run_pipeline gets of the credentials: the
// NAME=secret entries for one pipeline (the session's role decides which)
// and the scrubber for what the run lets out. Only the runner implements
// it; the secrets themselves stay in package credentials.
type PipelineCredentials interface {
	// PipelineEnv returns the entries to add to the run's environment and
	// the scrubber that replaces them in its output. An unusable
	// credential is an error (the run must not start without it).
	PipelineEnv(pipeline string) (env []string, scrub Scrubber, err error)
}

// Scrubber replaces or finds the secrets a call was given.
type Scrubber interface {
	// Bytes returns b with every secret replaced by its marker.
	Bytes(b []byte) []byte
	// Find returns the id of a secret that occurs in r, or "".
	Find(r io.Reader) (string, error)
	// String is Bytes for a string (Provenance.Scrub).
	String(s string) string
}

// Broker performs the external I/O of an approved need. Only the runner
// implements it, with the session's policy checking every host, redirect
// and connected address.
type Broker interface {
	Execute(ctx context.Context, need declarations.Need) (*External, error)
}

// UpstreamTool is an approved upstream tool as the catalog shows it.
type UpstreamTool struct {
	Upstream, Tool, Description string
	InputSchema                 json.RawMessage
	Digest                      string
}

// UpstreamPins is the runner's check of a comm.mcp need against the pinned
// definitions, made before the policy step (Expand): first whether the
// caller's policy could allow the tool at all (else POLICY_DENIED, told
// before anything about the tool), then the upstream is configured, the
// tool's definition is approved and not changed since, every argument key
// is named by the pinned input schema and the arguments satisfy it. It
// returns the pinned digest. Only the runner implements it.
type UpstreamPins interface {
	Check(ctx context.Context, upstream, tool string, args json.RawMessage) (digest string, err error)
}

// Approvals asks a person about a declaration with a server-minted,
// single-use challenge and checks that an answer answers it. Only the
// runner implements it, binding each challenge to the declaration, the
// context, the principal, the need and the policy version.
type Approvals interface {
	// Ask returns the request state for a question about d.
	Ask(ctx context.Context, d *declarations.Declaration) (string, error)
	// DeclarationOf returns the declaration a request state asks about, if
	// the server issued it (it may still be expired or used).
	DeclarationOf(state string) (string, error)
	// Redeem checks that state is an unexpired, unused question about d
	// asked in this context under the current policy, and uses it up.
	Redeem(ctx context.Context, state string, d *declarations.Declaration) error
	// Provenance is where each traced argument of d came from, as the
	// question shows it (provenance.go); nil when nothing was traced.
	Provenance(d *declarations.Declaration) []ArgOrigin
	// Endorse vouches, in d's context only, for the values of d's
	// arguments that no trusted input explains, on the word of the person
	// who answered the question about d (Redeem first). Audited.
	Endorse(ctx context.Context, d *declarations.Declaration, reason string) error
}

// External is what a broker brought back: untrusted content and where it
// came from.
type External struct {
	Text        string
	Source      string // the final URL, the search, the database
	ContentType string
	RetrievedAt time.Time
	Truncated   bool
	Details     any // executor-specific metadata (status, redirects, result count)
	// Scrub replaces the secrets injected into the request (nil: none),
	// for what is sanitized after the broker (Provenance.Scrub).
	Scrub func(string) string
}

// Elicitation carries what the client can do and has answered: Answers and
// RequestState are set when the client retries a call whose previous round
// asked for input.
type Elicitation struct {
	Supported    bool
	Answers      map[string]ElicitAnswer
	RequestState string
}

// ElicitAnswer is a person's answer: Action is accept, decline or cancel.
type ElicitAnswer struct {
	Action  string
	Content map[string]any
}

// ElicitRequest asks the client's person a question; State comes back with
// the answer (the client echoes it, so it is checked, never trusted).
type ElicitRequest struct {
	ID      string
	Message string
	Schema  map[string]any
	State   string
}

// Result is what a tool returns; the runner truncates, fences and audits it
// before any of it reaches the agent.
type Result struct {
	// Text is the human/model-readable answer, written by Airlock.
	Text string
	// UntrustedText is content Airlock did not author (an untrusted pool,
	// fetched data, a pipeline's output); the runner fences it, labelled with
	// Untrusted, and places it after Text.
	UntrustedText string
	Untrusted     *Provenance
	// TrustedText is content in Text that Airlock did not write but a
	// trusted pool holds (a page of it), labelled with Trusted: the
	// runner records it in the context's provenance (issue 22).
	TrustedText string
	Trusted     *Provenance
	// Blobs are binary payloads (embedded resources).
	Blobs []Blob
	// Structured is the same data for programmatic clients.
	Structured any
	// Elicit, when set, ends this round by asking the client's person; the
	// client retries the call with the answer.
	Elicit *ElicitRequest
	// Audit is tool-specific detail for the audit record (never secrets).
	Audit map[string]any
	// Derived, when set, is a new read-only pool the result created (a
	// pipeline run's published outputs); the runner binds it to the
	// calling context, in the store, for every process serving it.
	Derived *DerivedPool
	// Pending, when set, is a declaration that now waits for an operator:
	// the runner notifies the configured webhooks (package notify).
	Pending *PendingApproval
	// Finish, when set, ends the execution of a declaration: the runner
	// stores it in the call's audit record's transaction (store.DB.AppendCall),
	// so the end and the audit are durable together before the answer.
	Finish *declarations.Move
	// Exact says the tool sized Text and UntrustedText to the output limit
	// itself (a page whose next_offset counts the bytes it holds); the
	// runner refuses such a result rather than cut it, since a cut page
	// would make next_offset skip bytes.
	Exact bool
}

// PendingApproval describes a declaration waiting for an operator.
type PendingApproval struct {
	DeclarationID, Operation, Target, RuleID string
	ExpiresAt                                time.Time
}

// DerivedPool is a pool made by a call: a directory of files and their
// SHA-256 manifest, with the trust its inputs allow.
type DerivedPool struct {
	ID          string
	Description string
	Dir         string // host path; never shown to the agent
	Manifest    string // host path of the sha256sum manifest
	Trust       string // "trusted" or "untrusted"
	// Readers is who may see the outputs: the meet of the input pools'
	// readers (sources.MeetReaders); nil is public.
	Readers []string
}

// Provenance describes where untrusted text came from.
type Provenance struct {
	Kind   string // e.g. "pool_file", "comm.fetch"
	Source string // e.g. "pool:web-notes/2026/notes.md"
	Trust  string
	// Readers is who may see the content, from the configuration of the
	// pool it was read from (nil: public). The runner adds an upstream's
	// readers itself; the label records them.
	Readers []string
	// Attribute asks the runner to sign an attribution for the fenced
	// content (source, time, session, declaration, content hash, trust).
	Attribute     bool
	DeclarationID string
	RetrievedAt   time.Time
	// Scrub, when set, replaces the secrets injected into the request
	// that produced the content; the runner's fence applies it after
	// sanitizing (fence.Meta.Scrub; issue 26, item 5).
	Scrub func(string) string
}

// Blob is a binary payload returned as an MCP embedded resource.
// Binary content cannot be fenced as text; an untrusted blob is marked in
// the resource's _meta instead ("airlock/trust": "untrusted").
type Blob struct {
	URI      string
	MIMEType string
	Data     []byte
	Trust    string // "trusted" or "untrusted"
}
