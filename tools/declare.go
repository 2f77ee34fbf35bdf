package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/fence"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/policy"
	"github.com/airlock-dev/airlock/internal/policy/redact"
	"github.com/airlock-dev/airlock/schemas"
)

// DeclareNeedArgs are declare_need's arguments: either a new need
// (operation, parameters, justification) or the id of one declared earlier.
type DeclareNeedArgs struct {
	Operation     declarations.Operation      `json:"operation,omitempty" jsonschema:"enum=comm.fetch,enum=comm.search,enum=comm.query,enum=comm.mcp,description=What kind of external information: comm.fetch (a URL)\\, comm.search (a web search)\\, comm.query (read-only SQL on a configured database)\\, comm.mcp (a tool of an upstream MCP server)."`
	Parameters    *declarations.Parameters    `json:"parameters,omitempty" jsonschema:"description=Where: url for comm.fetch; query (and optional source) for comm.search; query and source for comm.query; upstream\\, tool and arguments for comm.mcp."`
	Justification *declarations.Justification `json:"justification,omitempty" jsonschema:"description=Why: the user's request\\, what you do not know\\, and how you will use the answer. All three are required and are shown to the approver."`
	DeclarationID string                      `json:"declaration_id,omitempty" jsonschema:"maxLength=64,description=Instead of a new need: the id of one declared earlier\\, to collect its result once approved."`
	Phase         string                      `json:"phase,omitempty" jsonschema:"maxLength=32,description=Optional: the phase you believe the session is in. The phase is server-owned; a claim that differs is refused."`
}

// Validate implements toolkit.Args. A valid comm.fetch need leaves with its
// URL in normal form ([declarations.Need.Normalize]).
func (a *DeclareNeedArgs) Validate() error {
	hasNeed := a.Operation != "" || a.Parameters != nil || a.Justification != nil
	switch {
	case a.DeclarationID != "" && hasNeed:
		return invalid("declaration_id", "give either a new need or a declaration_id, not both")
	case a.DeclarationID == "" && !hasNeed:
		return invalid("operation", "required (or give a declaration_id)")
	case a.DeclarationID != "":
		return nil
	}
	n := a.need()
	err := n.Validate()
	if err == nil {
		// From here on the need's URL is its normal form: the policy, the
		// approver, the declarations table and the fetcher all see one URL
		// (issue 10, item 1; TestDeclareNeedNormalisedURL).
		err = n.Normalize()
	}
	if err != nil {
		var fe *declarations.FieldError
		if errors.As(err, &fe) {
			return violation.Wrap(violation.InvalidArguments, err, "argument %q: %s", fe.Field, fe.Reason)
		}
		return violation.Wrap(violation.InvalidArguments, err, "the need is not valid")
	}
	if a.Parameters != nil {
		a.Parameters.URL = n.Parameters.URL
		if n.Operation == declarations.OpMCP {
			// Canonical arguments: what the fingerprint, the policy and
			// the upstream see are the same bytes.
			a.Parameters.Arguments = n.Parameters.Arguments
		}
	}
	return nil
}

// Target implements toolkit.Targeted: the policy sees the need's URL and query.
func (a *DeclareNeedArgs) Target() (string, string) {
	if a.Parameters == nil {
		return "", ""
	}
	return a.Parameters.URL, a.Parameters.Query
}

func (a *DeclareNeedArgs) need() declarations.Need {
	n := declarations.Need{Operation: a.Operation}
	if a.Parameters != nil {
		n.Parameters = *a.Parameters
	}
	if a.Justification != nil {
		n.Justification = *a.Justification
	}
	return n
}

// elicitID is the id of the approval question in an elicitation round.
const elicitID = "approve"

func declareNeed() toolkit.Tool {
	return toolkit.Tool{
		Name:  "declare_need",
		Title: "Declare a need for external information",
		Description: "You cannot reach the outside world directly. Declare what external information you need (operation), where it comes from " +
			"(parameters) and why (justification). Airlock's policy decides; a person may have to approve. In the planning phase you get the " +
			"decision it would get, with no external I/O; in the execution phase an approved need is fetched by Airlock and returned inside " +
			"an UNTRUSTED_EXTERNAL_CONTENT fence with a signed attribution. Use declaration_id to collect a need approved later.",
		Tier:            toolkit.TierExternal,
		ReadOnly:        false,
		OpenWorld:       true,
		InputSchema:     schemas.MustReflect(&DeclareNeedArgs{}),
		OutputSchema:    outputSchema("declare_need"),
		NewArgs:         func() toolkit.Args { return &DeclareNeedArgs{} },
		Catalog:         declareCatalog,
		Capability:      declareCapability,
		HandlesApproval: true,
		Expand:          expandDeclaration,
		Precheck:        declarePrecheck,
		Intent:          declareIntent,
		Handle:          declareHandle,
	}
}

// declareCapability is the need's operation (comm.fetch, ...). Validation
// and Expand guarantee one is set before the policy runs; an empty one maps
// to a capability no pattern should grant rather than to "".
func declareCapability(a toolkit.Args) string {
	args := a.(*DeclareNeedArgs)
	if args.Operation == declarations.OpMCP && args.Parameters != nil {
		// mcp.<upstream>.<tool>: names were validated (no '.'), so the
		// capability splits one way only.
		return policy.MCPPrefix + args.Parameters.Upstream + "." + args.Parameters.Tool
	}
	if op := args.Operation; op != "" {
		return string(op)
	}
	return "comm.undeclared"
}

// expandDeclaration replaces a declaration id — given by the agent, or
// named by the approval question a client answers — by the stored need, so
// that the policy re-judges exactly what was declared. Another context's
// declaration is "not found", never "forbidden": its existence is not
// revealed.
//
// An answer counts only if it answers a question this server asked (the
// request state is a server-minted challenge), only where the role lets the
// person at the client approve, and only from a client that declared it can
// ask its person. Anything else is APPROVAL_INVALID: an agent that writes
// its own "approve" into its first call gets a refusal, not an approval.
func expandDeclaration(ctx context.Context, env *toolkit.Env, a toolkit.Args) (toolkit.Args, error) {
	args := a.(*DeclareNeedArgs)
	id := args.DeclarationID
	st, answered := env.Elicitation.RequestState, len(env.Elicitation.Answers) > 0
	if st != "" || answered {
		switch {
		case env.Session.Approver != config.ApproverClient:
			return nil, violation.New(violation.ApprovalInvalid, "needs of role %q are approved by an operator; an answer from the client does not count", env.Session.Role)
		case !env.Elicitation.Supported:
			return nil, violation.New(violation.ApprovalInvalid, "the client did not declare the elicitation capability, so it was asked nothing")
		case st == "":
			return nil, violation.New(violation.ApprovalInvalid, "an answer to a question the server did not ask")
		}
		asked, err := env.Approvals.DeclarationOf(st)
		if err != nil {
			return nil, err
		}
		if id != "" && id != asked {
			return nil, violation.New(violation.ApprovalInvalid, "the answer is to a question about another declaration")
		}
		id = asked
	}
	if id == "" {
		return args, checkUpstream(ctx, env, args)
	}
	d, err := env.Declarations.Get(ctx, id, env.Session.ContextID)
	if err != nil {
		if errors.Is(err, declarations.ErrNotFound) || errors.Is(err, declarations.ErrWrongContext) {
			return nil, violation.Wrap(violation.NotFound, err, "no declaration %q in this context", boundedName(id))
		}
		return nil, err
	}
	// A retry of the original call carries the need again: it must be the
	// need the question was about.
	if n := args.need(); args.DeclarationID == "" && args.Operation != "" && n.Fingerprint() != d.Fingerprint {
		return nil, violation.New(violation.ApprovalInvalid, "the answer is to a question about another need")
	}
	p, j := d.Need.Parameters, d.Need.Justification
	out := &DeclareNeedArgs{Operation: d.Need.Operation, Parameters: &p, Justification: &j, DeclarationID: d.ID, Phase: args.Phase}
	return out, checkUpstream(ctx, env, out)
}

// checkUpstream checks a comm.mcp need against the pinned definition before
// the policy step runs (toolkit.UpstreamPins): a tool the caller's policy
// could never allow is POLICY_DENIED first, whatever its pin says (server's
// TestUpstreamDeniedRoleLearnsNothing); then the upstream is configured,
// the tool's definition is approved and unchanged, and the arguments are
// named by and satisfy the pinned input schema. A tool an operator never
// approved, or one whose definition changed (a rug pull), is refused here
// in every phase, so neither the policy's rules nor a person are ever
// asked about it (TestUpstreamUnreviewedNeverUsable, TestUpstreamRugPull).
func checkUpstream(ctx context.Context, env *toolkit.Env, args *DeclareNeedArgs) error {
	if args.Operation != declarations.OpMCP || args.Parameters == nil {
		return nil
	}
	if env.Upstreams == nil {
		return violation.New(violation.UpstreamUnavailable, "no upstream MCP servers are available")
	}
	p := args.Parameters
	_, err := env.Upstreams.Check(ctx, p.Upstream, p.Tool, p.Arguments)
	return err
}

func declarePrecheck(env *toolkit.Env, a toolkit.Args) error {
	if p := a.(*DeclareNeedArgs).Phase; p != "" && p != env.Session.Phase {
		return violation.New(violation.PhaseBlocked, "the session is in phase %q, not %q; the phase is set by the server, never by a tool argument", env.Session.Phase, boundedName(p))
	}
	return nil
}

// declareIntent is a new need the policy allows and that runs at once: its
// declaration, created executing (declared, approved by the policy, its
// approval consumed), for the runner to store with the call's started
// record — one write before the executor is called (issue 23). Any other
// call names nothing and declareHandle stores what it must.
func declareIntent(env *toolkit.Env, a toolkit.Args) (*declarations.Declaration, error) {
	args, dec := a.(*DeclareNeedArgs), env.Decision
	if args.DeclarationID != "" || dec.Effect != policy.Allow || env.DryRun || env.Broker == nil || len(env.Elicitation.Answers) != 0 {
		return nil, nil
	}
	return env.Declarations.NewExecuting(env.Session.ContextID, env.Session.Principal, args.need(), dec.RuleID, dec.Reason)
}

func declareHandle(ctx context.Context, env *toolkit.Env, a toolkit.Args) (*toolkit.Result, error) {
	args := a.(*DeclareNeedArgs)
	m, sess := env.Declarations, env.Session
	var (
		d   *declarations.Declaration
		err error
	)
	switch dec := env.Decision; {
	case env.Intent != nil:
		// Approved by the policy and run at once: declared, approved and
		// its approval consumed, stored with the started record
		// (declareIntent).
		return run(ctx, env, env.Intent)
	case args.DeclarationID == "":
		d, err = m.Declare(ctx, sess.ContextID, sess.Principal, args.need(), string(dec.Effect), dec.RuleID, dec.Reason)
	default:
		d, err = m.Get(ctx, args.DeclarationID, sess.ContextID)
	}
	if err != nil {
		return nil, err
	}
	if d, err = applyAnswer(ctx, env, d); err != nil {
		return nil, err
	}
	res, err := advance(ctx, env, d)
	// Declared by this very call and waiting for an operator: tell them,
	// once (a poll with the declaration_id is not news).
	if err == nil && args.DeclarationID == "" && !env.DryRun && d.State == declarations.StateDeclared && res.Elicit == nil {
		res.Pending = &toolkit.PendingApproval{DeclarationID: d.ID, Operation: string(d.Need.Operation),
			Target: quoteField(targetOf(d.Need)), RuleID: d.RuleID, ExpiresAt: d.ExpiresAt}
	}
	return res, err
}

// applyAnswer records a person's answer to the approval question, once the
// question it answers is checked and used up (expandDeclaration checked
// that there was one).
func applyAnswer(ctx context.Context, env *toolkit.Env, d *declarations.Declaration) (*declarations.Declaration, error) {
	if len(env.Elicitation.Answers) == 0 {
		return d, nil
	}
	if err := env.Approvals.Redeem(ctx, env.Elicitation.RequestState, d); err != nil {
		return nil, err
	}
	ans, ok := env.Elicitation.Answers[elicitID]
	if !ok {
		return nil, violation.New(violation.ApprovalInvalid, "the answer does not answer the approval question")
	}
	if d.State != declarations.StateDeclared {
		return nil, violation.New(violation.ApprovalInvalid, "declaration %s is already %s; the answer came too late", d.ID, d.State)
	}
	by := "elicitation:" + env.Session.Principal
	switch {
	case ans.Action == "accept" && ans.Content[decisionField] == decisionApprove:
		return approveAnswer(ctx, env, d, by, ans.Content[endorseField] == true)
	case ans.Action == "accept" && ans.Content[decisionField] == decisionDeny:
		return env.Declarations.Deny(ctx, d.ID, by, "denied by the person at the client")
	case ans.Action == "accept":
		// Accept with no choice is not a decision either way (a form
		// submitted without picking one must not read as a denial, nor
		// anything but an explicit "approve" as an approval).
		return nil, violation.New(violation.ApprovalInvalid, "the answer accepted the form but made no decision (%s must be %q or %q); declaration %s still waits",
			decisionField, decisionApprove, decisionDeny, d.ID)
	case ans.Action == "decline":
		return env.Declarations.Deny(ctx, d.ID, by, "declined by the person at the client")
	default: // cancel: no decision; the declaration waits for one
		return d, nil
	}
}

// The approval form: one required, explicit choice.
const (
	decisionField   = "decision"
	decisionApprove = "approve"
	decisionDeny    = "deny"
)

// advance moves a declaration as far as this call may take it.
func advance(ctx context.Context, env *toolkit.Env, d *declarations.Declaration) (*toolkit.Result, error) {
	switch d.State {
	case declarations.StateDeclared:
		if env.DryRun {
			return planned(d, "needs approval"), nil
		}
		_, answered := env.Elicitation.Answers[elicitID]
		if env.Session.Approver == config.ApproverClient && env.Elicitation.Supported && !answered {
			return askApproval(ctx, env, d)
		}
		return pending(d), nil
	case declarations.StateApproved:
		if env.DryRun {
			return planned(d, "approved by "+d.DecidedBy), nil
		}
		return execute(ctx, env, d)
	case declarations.StateFailed:
		id := d.ID
		d, err := env.Declarations.Retry(ctx, id, env.Session.ContextID)
		if err != nil {
			return nil, violation.Wrap(violation.PreconditionFailed, err, "declaration %s failed and has no retry left; declare the need again", id)
		}
		if env.Decision.Effect == policy.Allow {
			if d, err = env.Declarations.Approve(ctx, d.ID, "policy:"+env.Decision.RuleID, "retry re-approved by policy"); err != nil {
				return nil, err
			}
		}
		return advance(ctx, env, d)
	case declarations.StateDenied:
		return nil, violation.New(violation.PolicyDenied, "declaration %s was denied by %s: %s", d.ID, d.DecidedBy, decisionReason(d))
	case declarations.StateExecuted:
		return nil, violation.New(violation.ApprovalRequired, "declaration %s was already executed; an approval is used once: declare the need again", d.ID)
	case declarations.StateExpired:
		return nil, violation.New(violation.ApprovalRequired, "declaration %s expired before it was used; declare the need again", d.ID)
	default:
		return nil, violation.New(violation.PreconditionFailed, "declaration %s is %s", d.ID, d.State)
	}
}

func execute(ctx context.Context, env *toolkit.Env, d *declarations.Declaration) (*toolkit.Result, error) {
	if env.Broker == nil {
		return nil, violation.New(violation.Unavailable, "no executor is configured for %s", d.Need.Operation)
	}
	id := d.ID
	d, err := env.Declarations.Begin(ctx, id, env.Session.ContextID) // consumes the approval, once
	if err != nil {
		return nil, violation.Wrap(violation.ApprovalRequired, err, "declaration %s cannot run: its approval is used, expired or gone", id)
	}
	return run(ctx, env, d)
}

// run executes d, whose approval is consumed (executing), and ends its
// execution: a failure at once (Finish), a result with the call's audit
// record (FinishLater; Result.Finish).
func run(ctx context.Context, env *toolkit.Env, d *declarations.Declaration) (*toolkit.Result, error) {
	ext, xerr := env.Broker.Execute(ctx, d.Need)
	if xerr != nil {
		if _, ferr := env.Declarations.Finish(context.WithoutCancel(ctx), d.ID, nil, xerr); ferr != nil {
			return nil, errors.Join(xerr, ferr)
		}
		return nil, xerr
	}
	sum := sha256.Sum256([]byte(ext.Text))
	ref := &declarations.ResultRef{ContentSHA256: hex.EncodeToString(sum[:]), Bytes: int64(len(ext.Text))}
	finish, d, err := env.Declarations.FinishLater(d, ref, nil)
	if err != nil {
		return nil, err
	}
	// Airlock's own words name what was declared and approved, never a
	// value the remote chose: the final URL after redirects, the content
	// type and the redirect chain come from the server that answered, so
	// they stay in the fence header and, sanitized, under
	// untrusted_details (a redirect to /Ignore-previous-instructions must
	// not read as Airlock's text).
	target := declaredTarget(d.Need, ext.Source)
	note, after := "", ""
	switch details, _ := ext.Details.(map[string]any); {
	case d.Need.Operation == declarations.OpMCP && details["upstream_error"] == true:
		// The upstream's error text is its own words: fenced below, never
		// in Airlock's sentence.
		after = " The upstream answered with an error (" + string(violation.UpstreamError) + "); its text is the fenced content."
	case d.Need.Operation == declarations.OpMCP:
	case ext.Source != target:
		note = " (redirected; the final address is in the fence header)"
	}
	return &toolkit.Result{
		Text: fmt.Sprintf("Declaration %s (%s) executed: %s%s, %d bytes, retrieved %s.%s", d.ID, d.Need.Operation, fence.Quote(target), note,
			len(ext.Text), ext.RetrievedAt.UTC().Format("2006-01-02T15:04:05Z"), after),
		UntrustedText: ext.Text,
		Untrusted: &toolkit.Provenance{Kind: string(d.Need.Operation), Source: ext.Source, Trust: "untrusted",
			Attribute: true, DeclarationID: d.ID, RetrievedAt: ext.RetrievedAt, Scrub: ext.Scrub},
		Structured: map[string]any{"declaration_id": d.ID, "state": d.State, "operation": d.Need.Operation, "source": target,
			"truncated": ext.Truncated, "untrusted_details": untrustedDetails(ext)},
		Audit:  map[string]any{"declaration_id": d.ID, "state": d.State, "source": ext.Source, "bytes": len(ext.Text), "decided_by": d.DecidedBy},
		Finish: finish,
	}, nil
}

// declaredTarget is what the declaration named: a fetch's URL (as
// approved), else the executor's own source (a configured endpoint).
func declaredTarget(n declarations.Need, source string) string {
	switch {
	case n.Operation == declarations.OpFetch && n.Parameters.URL != "":
		return n.Parameters.URL
	case n.Operation == declarations.OpMCP:
		return "mcp:" + n.Parameters.Upstream + "/" + n.Parameters.Tool
	}
	return source
}

// untrustedDetails are the remote's answers about itself, sanitized, and
// then scrubbed of the secrets the request carried (a redirect's Location
// may echo one split by characters the sanitizer removes: issue 26, item 5).
func untrustedDetails(ext *toolkit.External) map[string]any {
	clean := func(s string) string {
		out, _, err := fence.Scrubbed(s, ext.Scrub)
		if err != nil {
			return "[withheld: it held a credential]"
		}
		return out
	}
	out := map[string]any{"final_url": clean(ext.Source), "content_type": clean(ext.ContentType)}
	details, _ := ext.Details.(map[string]any)
	for k, v := range details {
		switch v := v.(type) {
		case string:
			out[k] = clean(v)
		case []string:
			cleaned := make([]string, len(v))
			for i := range v {
				cleaned[i] = clean(v[i])
			}
			out[k] = cleaned
		case int, int64, bool:
			out[k] = v
		default:
			// Anything else an executor returns (the search results
			// themselves) is in the fenced content, not here.
		}
	}
	return out
}

// planned answers a declaration in planning: the decision, no I/O.
func planned(d *declarations.Declaration, status string) *toolkit.Result {
	return &toolkit.Result{
		Text: fmt.Sprintf("Declared %s as %s (planning phase: nothing was fetched). Decision: %s (rule %s: %s). "+
			"In the execution phase, call declare_need with declaration_id=%q to run it.", d.Need.Operation, d.ID, status, d.RuleID, d.Reason, d.ID),
		Structured: declarationView(d),
		Audit:      map[string]any{"declaration_id": d.ID, "state": d.State, "dry_run": true},
	}
}

// pending answers a declaration that waits for a person.
func pending(d *declarations.Declaration) *toolkit.Result {
	return &toolkit.Result{
		Text: fmt.Sprintf("Declaration %s needs approval (rule %s: %s) and an operator decides it. An operator can decide with "+
			"`airlock approvals approve %s [--state DIR]` or `airlock approvals deny %s --reason ... [--state DIR]`; then call "+
			"declare_need with declaration_id=%q, from this or any later session.",
			d.ID, d.RuleID, d.Reason, d.ID, d.ID, d.ID),
		Structured: declarationView(d),
		Audit:      map[string]any{"declaration_id": d.ID, "state": d.State},
	}
}

// targetOf is what a need acts on, as shown to a person: the URL with any
// query credentials masked, or the source and query.
func targetOf(n declarations.Need) string {
	if where := redact.Query(n.Parameters.URL, redact.Masked); where != "" {
		return where
	}
	if n.Operation == declarations.OpMCP {
		return "upstream " + n.Parameters.Upstream + ", tool " + n.Parameters.Tool + ", arguments " + string(n.Parameters.Arguments)
	}
	return strings.TrimSpace(n.Parameters.Source + " " + n.Parameters.Query)
}

// askApproval ends this round with a question to the client's person,
// showing what, why and where. Every field is quoted and cut, so no field
// can add lines to the question or pose as Airlock's own words; the request
// state is a server-minted challenge for this declaration.
func askApproval(ctx context.Context, env *toolkit.Env, d *declarations.Declaration) (*toolkit.Result, error) {
	n := d.Need
	// A need stored before query credentials were refused is shown
	// without their values (issue 10, item 3).
	where := targetOf(n)
	msg := fmt.Sprintf("An AI agent asks Airlock to perform %s on: %s\n\nThe user asked: %s\nWhat it does not know: %s\nHow it will use the answer: %s\n%s\nApprove this one request?",
		n.Operation, quoteField(where), quoteField(n.Justification.UserRequest), quoteField(n.Justification.MissingKnowledge),
		quoteField(n.Justification.ExpectedUse), provenanceLines(env.Approvals.Provenance(d)))
	state, err := env.Approvals.Ask(ctx, d)
	if err != nil {
		return nil, err
	}
	return &toolkit.Result{
		Text: "Waiting for the person at the client to approve declaration " + d.ID + ".",
		Elicit: &toolkit.ElicitRequest{ID: elicitID, Message: msg, State: state, Schema: map[string]any{
			"type": "object",
			"properties": map[string]any{decisionField: map[string]any{
				"type": "string", "title": "Your decision", "description": "Approve or deny this one request.",
				"oneOf": []any{
					map[string]any{"const": decisionApprove, "title": "Approve this one request"},
					map[string]any{"const": decisionDeny, "title": "Deny it"},
				},
			}, endorseField: endorseProperty},
			"required": []string{decisionField},
		}},
		Structured: declarationView(d),
		Audit:      map[string]any{"declaration_id": d.ID, "state": d.State, "asked": "elicitation"},
	}, nil
}

// maxQuotedField bounds one field in an approval question, in runes.
const maxQuotedField = 300

// quoteField renders an agent-supplied field for the approval question: cut
// to maxQuotedField runes and Go-quoted, so newlines, control, format and
// bidi characters show as escapes and cannot shape the question.
func quoteField(s string) string {
	r := []rune(s)
	if len(r) > maxQuotedField {
		return strconv.Quote(string(r[:maxQuotedField])) + "…"
	}
	return strconv.Quote(s)
}

// decisionReason is the reason given with the latest decision (an
// operator's or a person's), else the policy's.
func decisionReason(d *declarations.Declaration) string {
	for i := len(d.History) - 1; i >= 0; i-- {
		if h := d.History[i]; h.Reason != "" && (h.To == declarations.StateDenied || h.To == declarations.StateApproved) {
			return h.Reason
		}
	}
	return d.Reason
}

func declarationView(d *declarations.Declaration) map[string]any {
	return map[string]any{
		"declaration_id": d.ID, "state": d.State, "operation": d.Need.Operation, "decision": d.Decision,
		"rule_id": d.RuleID, "reason": d.Reason, "decided_by": d.DecidedBy, "expires_at": d.ExpiresAt,
	}
}
