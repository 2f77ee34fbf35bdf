package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/edge/tracing"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/execution/upstream"
	"github.com/airlock-dev/airlock/internal/kit/argschema"
	"github.com/airlock-dev/airlock/internal/kit/calllog"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/internal/policy/policy"
	"github.com/airlock-dev/airlock/internal/provenance"
	"github.com/airlock-dev/airlock/phasegate"
	"github.com/airlock-dev/airlock/sources"
	"github.com/airlock-dev/airlock/store"
	"github.com/google/uuid"
)

// Call is one tool call as a transport received it.
type Call struct {
	Tool string
	Args json.RawMessage
	// Progress, if set, forwards progress notifications to the client.
	Progress func(progress, total float64, message string)
	// Elicitation is what the client can answer and has answered.
	Elicitation toolkit.Elicitation
	// RequestID is the JSON-RPC id, and Traceparent/Tracestate the W3C
	// trace context from params._meta, for the call's span (package
	// tracing); all may be empty, and a malformed trace context is ignored.
	RequestID               string
	Traceparent, Tracestate string
}

// Response is what the transport sends back: either content or a typed
// error, never both. Text is already truncated and fenced.
type Response struct {
	IsError    bool
	Code       violation.Code // set when IsError
	Text       string
	Blobs      []toolkit.Blob
	Structured any
	Truncated  bool
	AuditSeq   int64
	// Elicit, when set, asks the client's person a question; the client
	// retries the call with the answer.
	Elicit *toolkit.ElicitRequest
}

// maxRecordedArgs bounds the arguments kept in one audit record; larger
// argument documents are recorded by hash only.
const maxRecordedArgs = 64 << 10

// call carries one call through the steps.
type call struct {
	s     *Session
	in    Call
	id    string       // the call id (calllog), on every log line the call causes
	log   *slog.Logger // the runner's logger with the call id
	rec   *audit.Record
	start time.Time
	tool  toolkit.Tool
	mode  phasegate.Mode

	// Step boundaries for metrics (zero when the call never got there).
	execStart, execEnd, auditStart time.Time
	span                           *tracing.Call // nil when tracing is off

	// The runtime context, loaded from the store at the start of every
	// call, so an operator's phase change or another process's usage is
	// seen at once: the context and its ancestors, its effective phase, the
	// policy in force and this process's binding of its pools.
	chain   []*contexts.Context
	phase   string
	policy  *policy.Policy
	sources *sources.Context
	input   *policy.Input // what step 5 decided over; nil before it

	traced []provenance.Argument // a need's arguments, traced at step 5 (provenance.go)
	seen   []*seen               // content the response hands the agent, to label
	labels *store.Labels         // their labels, recorded with the record
}

// Run executes one tool call through the fixed steps (the package doc
// lists them; each is marked "step:" below and in finish.go) and returns
// what the agent may see. It never panics and always writes an audit
// record.
func (s *Session) Run(ctx context.Context, in Call) *Response {
	// step: open
	id := calllog.NewID()
	ctx = calllog.WithID(ctx, id)
	// step: 7. redact — first in time, so that whatever step ends the call,
	// the record already holds only redacted arguments.
	rec := audit.Call(s.r.now().UTC(), s.actor(), boundedName(in.Tool), s.r.redactArgs(in.Args))
	c := &call{s: s, in: in, id: id, log: s.r.log.With(calllog.Key, id), rec: rec, start: s.r.now()}
	if s.r.tracer != nil {
		c.span = s.r.tracer.Start(ctx, s.traceInfo(in), c.start)
	}
	res, err := c.steps(ctx)
	return c.finish(ctx, res, err)
}

func (c *call) steps(ctx context.Context) (*toolkit.Result, error) {
	// step: look up the tool
	tool, ok := c.s.r.tools[c.in.Tool]
	if !ok {
		return nil, violation.New(violation.UnknownTool, "no tool named %q", boundedName(c.in.Tool))
	}
	c.tool = tool
	// step: load the context
	if err := c.load(ctx); err != nil {
		return nil, err
	}
	// step: 1. decode + validate
	args, argMap, err := decode(tool, c.s.r.gen.Load().tools[tool.Name].Validator, c.in.Args)
	if err != nil {
		return nil, err
	}
	// step: expand
	if tool.Expand != nil {
		if args, argMap, err = c.expand(ctx, tool, args); err != nil {
			return nil, err
		}
	}
	// step: 2. classify — from the declaration, never from the agent.
	c.rec.Tier = string(tool.Tier)
	c.rec.Capability = tool.Capability(args)
	// step: 3. kill switch
	if err := c.s.r.killSwitch(ctx); err != nil {
		return nil, err
	}
	// step: 4. phase gate
	if c.mode, err = phasegate.Check(c.phase, string(tool.Tier)); err != nil {
		return nil, violation.Wrap(violation.PhaseBlocked, err, "%s is not allowed in phase %q", tool.Name, c.phase)
	}
	// step: 5. policy
	in := &policy.Input{
		Tool: tool.Name, Capability: c.rec.Capability, Tier: string(tool.Tier), Session: c.s.id,
		Principal: c.s.principal, Role: c.s.role, Phase: c.phase, Args: argMap, Now: c.start,
	}
	if t, ok := args.(toolkit.Targeted); ok {
		in.URL, in.Query = t.Target()
	}
	if u := upstream.PolicyURL(c.s.r.Config(), c.rec.Capability); u != "" {
		in.URL = u // an HTTP upstream is judged by the network section (upstream.PolicyURL)
	}
	c.input = in
	// step: trace — before the policy decides, so it can judge where values came from.
	if err := c.traceNeed(ctx, args, in); err != nil {
		return nil, err
	}
	dec := c.policy.Decide(in)
	c.rec.Decision, c.rec.RuleID, c.rec.Reason = string(dec.Effect), dec.RuleID, dec.Reason
	switch dec.Effect {
	case policy.Allow:
	case policy.RequireApproval:
		if !tool.HandlesApproval {
			return nil, violation.New(violation.ApprovalRequired, "%s needs approval (rule %s)", c.rec.Capability, dec.RuleID)
		}
	default:
		return nil, violation.New(c.denyCode(dec), "%s is denied by policy (rule %s)", c.rec.Capability, dec.RuleID)
	}
	// step: 6. limits
	if err := c.s.r.admit(ctx, c.chain, c.s.principal, c.rec.Capability); err != nil {
		return nil, err
	}
	if d := time.Duration(c.policy.Limits().MaxExecutionTimeMS) * time.Millisecond; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, errMaxExecutionTime)
		defer cancel()
	}
	// step: 8. preconditions — given the capabilities the handler will get.
	env := c.env(dec)
	if tool.Precheck != nil {
		if err := guard(func() error { return tool.Precheck(env, args) }); err != nil {
			return nil, err
		}
	}
	// step: started record
	if tool.Tier != toolkit.TierRead {
		if err := c.recordStart(ctx); err != nil {
			return nil, err
		}
	}
	// step: 9. execute
	var res *toolkit.Result
	c.execStart = time.Now()
	err = guard(func() error {
		var herr error
		res, herr = tool.Handle(ctx, env, args)
		return herr
	})
	c.execEnd = time.Now()
	if err == nil && res == nil {
		err = errors.New("handler returned no result")
	}
	switch {
	case err == nil || ctx.Err() == nil:
	case errors.Is(context.Cause(ctx), errMaxExecutionTime):
		err = violation.Wrap(violation.LimitExceeded, err, "max_execution_time_ms exceeded")
	default:
		// The client cancelled, gave up (its own deadline) or went away:
		// its own outcome, not an internal error (no ERROR log, no ref
		// to chase) and not our limit.
		err = violation.Wrap(violation.Cancelled, err, "the call was cancelled before it finished")
	}
	return res, err
}

func (c *call) env(dec policy.Decision) *toolkit.Env {
	progress := c.in.Progress
	if progress == nil {
		progress = func(float64, float64, string) {}
	}
	cfg := c.s.r.Config()
	el := c.in.Elicitation
	el.Supported = el.Supported || c.s.elicitation
	return &toolkit.Env{
		Session: toolkit.Session{
			ID: c.s.id, ContextID: c.s.contextID, Principal: c.s.principal, Role: c.s.role,
			Phase: c.phase, Transport: c.s.transport, Approver: cfg.Roles[c.s.role].ApproverFor(c.s.transport),
		},
		Sources: c.sources, Decision: dec, Now: c.start, Progress: progress,
		Policy: c.policy, Config: cfg, Pipelines: c.s.r.pipelines,
		DryRun: c.mode == phasegate.DryRun, Declarations: c.s.r.decls, Elicitation: el,
		Broker:      &sessionBroker{cfg: c.s.r.broker, s: c.s, policy: c.policy, input: c.input},
		Approvals:   &approvals{c: c},
		Credentials: pipelineCredentials{set: c.s.r.creds, role: c.s.role},
		Upstreams:   &upstreamPins{c: c},
	}
}

// errMaxExecutionTime is the cause of the deadline the policy's
// max_execution_time_ms puts on a call, told apart from the client's own.
var errMaxExecutionTime = errors.New("max_execution_time_ms exceeded")

// load reads the call's runtime context from the store (see call).
func (c *call) load(ctx context.Context) error {
	chain, err := c.s.r.contextChain(ctx, c.s.contextID)
	if err != nil {
		return err
	}
	c.chain, c.phase = chain, effectivePhase(chain)
	c.rec.Phase = c.phase
	if c.policy, err = c.s.r.policyOf(chain[0]); err != nil {
		return err
	}
	if c.sources, err = c.s.r.bound(ctx, chain[0]); err != nil {
		return violation.Wrap(violation.Unavailable, err, "the pools of this context cannot be bound")
	}
	return nil
}

// expand runs a tool's Expand (step 1, continued): a reference in the
// arguments becomes what it refers to, re-validated, so the policy at step 5
// judges the real target.
func (c *call) expand(ctx context.Context, tool toolkit.Tool, args toolkit.Args) (toolkit.Args, map[string]any, error) {
	env := c.env(policy.Decision{})
	expanded, err := guardArgs(func() (toolkit.Args, error) { return tool.Expand(ctx, env, args) })
	if err != nil {
		return nil, nil, err
	}
	raw, err := json.Marshal(expanded)
	if err != nil {
		return nil, nil, fmt.Errorf("re-encoding expanded arguments: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, nil, fmt.Errorf("re-decoding expanded arguments: %w", err)
	}
	return expanded, m, nil
}

func guardArgs(f func() (toolkit.Args, error)) (out toolkit.Args, err error) {
	err = guard(func() error {
		var ferr error
		out, ferr = f()
		return ferr
	})
	return out, err
}

// recordStart writes a "started" record before a consequential call runs, so
// an unwritable store stops it before it touches anything.
func (c *call) recordStart(ctx context.Context) error {
	if err := c.s.r.db.Append(ctx, audit.CallStarted(c.rec)); err != nil {
		return violation.Wrap(violation.AuditUnavailable, err, "the audit trail cannot be written; call refused")
	}
	return nil
}

// decode checks raw against the tool's JSON Schema, then strictly decodes it
// into the tool's argument type (unknown fields, trailing data and wrong
// types refused) and runs the type's own Validate for what a schema cannot say.
// It also returns the arguments as a generic map for policy conditions.
func decode(tool toolkit.Tool, schema *argschema.Validator, raw json.RawMessage) (toolkit.Args, map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		raw = json.RawMessage("{}")
	}
	if err := schema.Validate(raw); err != nil {
		return nil, nil, err
	}
	args := tool.NewArgs()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(args); err != nil {
		return nil, nil, violation.Wrap(violation.InvalidArguments, err, "%s", describeDecodeError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, violation.New(violation.InvalidArguments, "arguments must be a single JSON object")
	}
	if err := args.Validate(); err != nil {
		return nil, nil, err
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m) // cannot fail: raw decoded above
	return args, m, nil
}

// describeDecodeError turns a decoding error into agent-safe text: field
// names and JSON types only, never the input echoed back.
func describeDecodeError(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("argument %q must be %s, not %s", te.Field, te.Type.Kind(), te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("arguments are not valid JSON (at byte %d)", se.Offset)
	case bytes.HasPrefix([]byte(err.Error()), []byte("json: unknown field ")):
		return "unknown argument " + err.Error()[len("json: unknown field "):]
	default:
		return "arguments must be a JSON object matching the tool's input schema"
	}
}

// guard runs f, turning a panic into an error so one bad handler cannot take
// the server down or skip the audit record.
func guard(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
	}()
	return f()
}

func (r *Runner) redactArgs(raw json.RawMessage) json.RawMessage {
	if len(raw) > maxRecordedArgs {
		out, _ := json.Marshal(map[string]any{"oversized_arguments": r.redactor.Hash(string(raw)), "bytes": len(raw)})
		return out
	}
	return r.redactor.JSON(raw)
}

// boundedName keeps an agent-supplied tool name printable and short before
// it is echoed or recorded.
func boundedName(s string) string {
	if len(s) > 64 {
		s = s[:64]
	}
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	return s
}

func newRef() string { return uuid.NewString()[:8] }

// actor is who the records of s's calls name.
func (s *Session) actor() audit.Actor {
	return audit.Actor{SessionID: s.id, ContextID: s.contextID, Principal: s.principal, Role: s.role,
		Transport: s.transport, ClientID: s.clientID}
}
