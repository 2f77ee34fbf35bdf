package audit

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// Kind names an audited event other than a tool call; it is the
// Capability of the event's record. (A call's record carries its tool's
// capability instead, and a Tool: see [Call].) This block is the whole
// vocabulary of the trail: every record Airlock writes is built by one
// constructor below, and TestEveryKindHasAGolden pins each one's bytes.
type Kind string

const (
	// Tool calls: [Call] starts the record of every call, whatever ends
	// it; [CallStarted] is the record a consequential call writes before
	// it executes.

	// KindSessionOpen: a transport session opened onto a context ([SessionOpen]).
	KindSessionOpen Kind = "session.open"
	// KindSessionClose: a client closed its session ([SessionClose]).
	KindSessionClose Kind = "session.close"
	// KindSessionExpire: a session idle past the timeout was closed ([SessionExpire]).
	KindSessionExpire Kind = "session.expire"
	// KindSessionEvict: a session closed, least recently used, to make room for its principal's new one ([SessionEvict]).
	KindSessionEvict Kind = "session.evict"
	// KindSessionRefusal: a request refused because of its session or context handle ([SessionRefusal]).
	KindSessionRefusal Kind = "transport.session"
	// KindEdgeRefusal: refusals at the transport edge, aggregated ([EdgeRefusal]).
	KindEdgeRefusal Kind = "transport.edge"
	// KindContextCreate: a principal's default context created ([ContextCreate]).
	KindContextCreate Kind = "context.create"
	// KindContextRebind: a default context rebound to its role's new policy or pools ([ContextRebind]).
	KindContextRebind Kind = "context.rebind"
	// KindCredentialRevoke: a scoped credential became unusable ([CredentialRevoke]).
	KindCredentialRevoke Kind = "credential.revoke"
	// KindCredentialRestore: a scoped credential became usable again ([CredentialRestore]).
	KindCredentialRestore Kind = "credential.restore"
	// KindDeclarationExpire: a declaration or an approval ran out of time ([DeclarationExpire]).
	KindDeclarationExpire Kind = "declaration.expire"
	// KindUpstreamPin: an upstream tool's definition changed state when listed ([UpstreamPin]).
	KindUpstreamPin Kind = "upstream.pin"
	// KindUpstreamEgress: one request of a sandboxed upstream through its egress proxy ([UpstreamEgress]).
	KindUpstreamEgress Kind = "upstream.egress"
	// KindUpstreamExited: a warm upstream's process ended by itself (a crash or a limit); the next call starts a new one ([UpstreamExited]).
	KindUpstreamExited Kind = "upstream.exited"
	// KindApprove: an operator approved a declared need ([Approve]).
	KindApprove Kind = "operator.approve"
	// KindDeny: an operator denied a declared need ([Deny]).
	KindDeny Kind = "operator.deny"
	// KindPhase: an operator moved a context between planning and execution ([Phase]).
	KindPhase Kind = "operator.phase"
	// KindChildContext: an operator created a child context ([ChildContext]).
	KindChildContext Kind = "operator.context_create"
	// KindContextTask: an operator gave a context its task text, its trusted input ([ContextTask]).
	KindContextTask Kind = "operator.context_task"
	// KindEndorse: an approver vouched for values in one context, so its later needs trace them as endorsed ([Endorse]).
	KindEndorse Kind = "context.endorse"
	// KindUpstreamApprove: an operator approved an upstream tool's definition ([UpstreamApprove]).
	KindUpstreamApprove Kind = "operator.upstream_approve"
	// KindUpstreamOverride: an operator approved an upstream tool's definition over the review's flags, or with a description of their own ([UpstreamOverride]).
	KindUpstreamOverride Kind = "operator.upstream_override"
	// KindKillSwitch: the kill switch engaged or released ([KillSwitch]).
	KindKillSwitch Kind = "operator.kill_switch"
	// KindReload: the configuration reloaded, or a reload refused ([Reload], [ReloadRefusal]).
	KindReload Kind = "operator.reload"
	// KindRotation: the oldest records moved into a sealed segment ([Rotation]).
	KindRotation Kind = "operator.audit_rotate"
	// KindConsoleLogin: an operator signed in to the console ([ConsoleLogin]).
	KindConsoleLogin Kind = "operator.console_login"
	// KindConsoleLogout: an operator signed out of the console ([ConsoleLogout]).
	KindConsoleLogout Kind = "operator.console_logout"
	// KindRunInterrupted: a pipeline run cut short by its process dying, found at the next start ([RunInterrupted]).
	KindRunInterrupted Kind = "pipeline.interrupted"
)

// The decisions of events: an order was carried out, or refused. (A
// call's decision is the policy's effect.)
const (
	allow = "allow"
	deny  = "deny"
)

// Who acts for Airlock itself, and over what.
const (
	airlock  = "airlock"  // the principal of Airlock's own events
	internal = "internal" // their transport
	upstream = "upstream" // the transport of what an upstream MCP server caused
	cli      = "cli"      // the transport of the offline commands
	signal   = "signal"   // the transport of a reload (SIGHUP or `airlock reload`)
)

// Call starts the record of one tool call, made at at by a with args
// (already redacted) to tool (as the agent named it, bounded). The
// runner's steps fill in the rest (tier, capability, phase, decision) and
// the call's ending its outcome: OutcomeOf(code) for a violation,
// OutcomeOK with the output's size otherwise.
func Call(at time.Time, a Actor, tool string, args json.RawMessage) *Record {
	r := a.record(at, "")
	r.Tool, r.Args = tool, args
	r.Extra = withClient(nil, a.ClientID)
	return r
}

// CallStarted is the record a call of the external or act tier writes
// before it executes: a copy of the call's record so far, started.
func CallStarted(call *Record) *Record {
	r := *call
	r.Outcome = OutcomeStarted
	return &r
}

// SessionOpen records a opening a session onto its context (a.ContextID),
// in phase, under policy, with pools bound.
func SessionOpen(at time.Time, a Actor, phase, policy string, pools []string) *Record {
	r := a.record(at, KindSessionOpen)
	r.Phase, r.Decision, r.Outcome = phase, allow, OutcomeOK
	r.Reason = fmt.Sprintf("context %s, pools bound: %v", a.ContextID, pools)
	r.Extra = withClient(jsonOf(map[string]any{"pools_bound": pools, "context_id": a.ContextID, "policy": policy}), a.ClientID)
	return r
}

// SessionClose records a's session closed by its client, with the
// context's usage so far (nil: none known to this process).
func SessionClose(at time.Time, a Actor, reason string, usage any) *Record {
	return sessionEnd(at, a, KindSessionClose, reason, usage)
}

// SessionExpire records a's session closed after idle without a request.
func SessionExpire(at time.Time, a Actor, idle time.Duration, usage any) *Record {
	return sessionEnd(at, a, KindSessionExpire, fmt.Sprintf("no request for %s", idle), usage)
}

// SessionEvict records a's session closed because its principal opened
// one more than maxOpen allows: the least recently used one goes, so that a
// client that never closes its sessions is not locked out (issue 26 item
// 3); by is the session that took its place.
func SessionEvict(at time.Time, a Actor, maxOpen int, by string, usage any) *Record {
	return sessionEnd(at, a, KindSessionEvict, fmt.Sprintf("least recently used of %d open sessions (max_sessions_per_principal): session %s took its place", maxOpen, by), usage)
}

func sessionEnd(at time.Time, a Actor, kind Kind, reason string, usage any) *Record {
	r := a.record(at, kind)
	r.Decision, r.Outcome, r.Reason = allow, OutcomeOK, reason
	var extra json.RawMessage
	if usage != nil {
		extra = jsonOf(usage)
	}
	r.Extra = withClient(extra, a.ClientID)
	return r
}

// SessionRefusal records a request refused because of its session (code
// is a SESSION_* or CONTEXT_INVALID code). Only who's principal, role and
// transport are recorded: the presented session may be someone else's
// live credential, so it appears only as presentedHash, a keyed hash ("":
// none was presented).
func SessionRefusal(at time.Time, who Actor, code violation.Code, presentedHash, reason string) *Record {
	r := &Record{Time: at, Principal: who.Principal, Role: who.Role, Transport: who.Transport,
		Capability: string(KindSessionRefusal), Decision: deny, Outcome: OutcomeDenied, Violation: string(code), Reason: reason}
	if presentedHash != "" {
		r.Extra = jsonOf(map[string]string{"presented_session": presentedHash})
	}
	return r
}

// EdgeRefusal records count refusals at the transport edge of one remote
// address, principal and cause (the edge aggregates floods). No presented
// token or message body is recorded, only the cause.
func EdgeRefusal(at time.Time, e Edge, count int) *Record {
	reason := e.Reason
	if count > 1 {
		reason = fmt.Sprintf("%s (%d refusals like this from this address)", reason, count)
	}
	principal := e.Principal
	if principal == "" {
		principal = "anonymous"
	}
	r := &Record{Time: at, Principal: principal, Role: e.Role, Transport: e.Transport, Capability: string(KindEdgeRefusal),
		Decision: deny, Reason: reason, Outcome: OutcomeDenied, Violation: e.Code}
	extra := map[string]any{"remote_addr": e.Remote, "count": count}
	if e.ClientID != "" {
		extra["client_id"] = e.ClientID
	}
	r.Extra = jsonOf(extra)
	return r
}

// ContextCreate records the default context of cx.Principal created.
func ContextCreate(at time.Time, cx Context, reason string) *Record {
	return contextEvent(at, cx, KindContextCreate, reason)
}

// ContextRebind records a default context rebound to its role's policy
// or pools as a reload changed them.
func ContextRebind(at time.Time, cx Context, reason string) *Record {
	return contextEvent(at, cx, KindContextRebind, reason)
}

func contextEvent(at time.Time, cx Context, kind Kind, reason string) *Record {
	return &Record{Time: at, ContextID: cx.ID, Principal: cx.Principal, Role: cx.Role, Transport: internal,
		Capability: string(kind), Phase: cx.Phase, Decision: allow, Outcome: OutcomeOK, Reason: reason,
		Extra: jsonOf(map[string]any{"parent": cx.Parent, "policy": cx.Policy, "policy_version": cx.PolicyVersion, "pools": cx.Pools})}
}

// CredentialRevoke records scoped credential id becoming unusable (its
// file removed or emptied, its variable unset). Never its value.
func CredentialRevoke(at time.Time, id, reason string) *Record {
	return &Record{Time: at, Principal: airlock, Transport: internal, Capability: string(KindCredentialRevoke),
		Decision: deny, Outcome: OutcomeDenied, Reason: "credential " + id + " revoked: " + reason,
		Extra: jsonOf(map[string]string{"credential_id": id})}
}

// CredentialRestore records scoped credential id usable again.
func CredentialRestore(at time.Time, id, reason string) *Record {
	return &Record{Time: at, Principal: airlock, Transport: internal, Capability: string(KindCredentialRestore),
		Decision: allow, Outcome: OutcomeOK, Reason: "credential " + id + " usable again: " + reason,
		Extra: jsonOf(map[string]string{"credential_id": id})}
}

// DeclarationExpire records a declaration (no decision in time) or an
// approval (not used in time) that expired.
func DeclarationExpire(at time.Time, d Expiry) *Record {
	what := "approval"
	if d.Undecided {
		what = "declaration (no decision in time)"
	}
	return &Record{Time: at, Principal: airlock, Transport: internal, Capability: string(KindDeclarationExpire),
		ContextID: d.ContextID, Decision: deny, Outcome: OutcomeDenied, Reason: what + " expired",
		Extra: jsonOf(map[string]any{"declaration_id": d.ID, "was": d.State, "owner": d.Owner, "expires_at": d.ExpiresAt})}
}

// Run is a pipeline run as its mark kept it (package runmark): who ran
// which pipeline, in which context and session, since when.
type Run struct {
	ID        string
	Pipeline  string
	ContextID string
	SessionID string
	Principal string
	Role      string
	Transport string
	StartedAt time.Time
}

// RunInterrupted records, at at, pipeline run r as interrupted: its
// process died (SIGKILL, power loss, a crash) while the run lasted, so its
// call's started record has no ending; its workspace was removed and
// nothing it wrote was published. Airlock records it at the next start.
func RunInterrupted(at time.Time, r Run) *Record {
	return &Record{Time: at, ContextID: r.ContextID, Principal: airlock, Transport: internal,
		Capability: string(KindRunInterrupted), Decision: deny, Outcome: OutcomeInterrupted,
		Reason: "pipeline run " + r.ID + " interrupted: the server stopped while it ran; its workspace was removed, nothing published",
		Extra: jsonOf(map[string]any{"run_id": r.ID, "pipeline": r.Pipeline, "session_id": r.SessionID, "owner": r.Principal,
			"role": r.Role, "transport": r.Transport, "started_at": r.StartedAt})}
}

// UpstreamPin records an upstream tool's definition changing state as
// principal's listing saw it; a changed (blocked) definition is a denial.
func UpstreamPin(at time.Time, principal string, p Pin) *Record {
	return pinRecord(at, upstream, principal, KindUpstreamPin, p, "tool definition now "+p.State, nil)
}

// UpstreamApprove records op approving the definition of an upstream tool
// with digest (why: the operator's reason, "" for none), or failing to: a
// failure (a stale digest, an unknown tool) is the outcome error.
func UpstreamApprove(at time.Time, op Operator, p Pin, digest, why string, err error) *Record {
	reason := "approved tool definition sha256:" + digest
	if why != "" {
		reason = why + " (" + reason + ")"
	}
	transport := op.Transport
	if transport == "" {
		transport = upstream
	}
	return pinRecord(at, transport, op.principal(), KindUpstreamApprove, p, reason, err)
}

// UpstreamOverride records op approving the definition of an upstream
// tool with digest over the review's flags, or with an edited
// description for the agent's catalog (o), or failing to: who, why,
// the review's score and signals the override set aside, and the
// SHA-256 of the edited description (never its text: it is in the
// store, beside the pin).
func UpstreamOverride(at time.Time, op Operator, p Pin, digest string, o Override, err error) *Record {
	what := "approved tool definition sha256:" + digest
	if o.Overridden {
		what += fmt.Sprintf(" over the review's flags (score %.2f: %s)", o.Score, strings.Join(o.Signals, ", "))
	}
	if o.EditedSHA256 != "" {
		what += ", catalog description edited (sha256:" + o.EditedSHA256 + ")"
	}
	transport := op.Transport
	if transport == "" {
		transport = upstream
	}
	r := pinRecord(at, transport, op.principal(), KindUpstreamOverride, p, o.Reason+" ("+what+")", err)
	r.Extra = jsonOf(map[string]any{
		"upstream": p.Upstream, "tool": p.Tool, "state": p.State, "seen_digest": p.SeenDigest, "approved_digest": p.ApprovedDigest,
		"flags": p.Flags, "digest": digest, "override": o.Overridden, "score": o.Score, "signals": o.Signals, "edited_sha256": o.EditedSHA256,
	})
	return r
}

func pinRecord(at time.Time, transport, principal string, kind Kind, p Pin, reason string, err error) *Record {
	r := &Record{Time: at, Principal: principal, Transport: transport, Capability: string(kind), Decision: allow, Outcome: OutcomeOK,
		Reason: reason, Extra: jsonOf(map[string]any{
			"upstream": p.Upstream, "tool": p.Tool, "state": p.State, "seen_digest": p.SeenDigest,
			"approved_digest": p.ApprovedDigest, "flags": p.Flags,
		})}
	if p.Blocked {
		r.Decision = deny
	}
	if err != nil {
		r.Outcome, r.Error = OutcomeError, err.Error()
	}
	return r
}

// UpstreamEgress records one request of upstream's sandboxed server
// (started for principal) through its egress proxy: never its content.
func UpstreamEgress(at time.Time, principal, upstreamID string, e Egress) *Record {
	reason := "a request the proxy could not read"
	if e.Host != "" {
		reason = fmt.Sprintf("%s %s", e.Method, net.JoinHostPort(e.Host, strconv.Itoa(e.Port)))
	}
	r := &Record{Time: at, Principal: principal, Transport: upstream, Capability: string(KindUpstreamEgress),
		Decision: allow, Outcome: OutcomeOK, Reason: reason,
		Extra: jsonOf(map[string]any{"upstream": upstreamID, "host": e.Host, "port": e.Port, "method": e.Method, "allowed": e.Allowed})}
	if !e.Allowed {
		r.Decision, r.Outcome, r.Violation = deny, OutcomeDenied, string(e.Code)
		if e.Err != nil {
			r.Error = e.Err.Error()
		}
	}
	return r
}

// Exited is how a warm upstream's process ended: whose session it was
// (the principal, "" for a shared one, and the scope: context:<id>,
// principal:<name>:<role> or shared:<role>), its exit status and the last
// lines of its stderr (bounded and scrubbed by its caller).
type Exited struct {
	Principal, Upstream, Scope, Status string
	Stderr                             []string
}

// UpstreamExited records that a warm upstream's process ended by itself.
func UpstreamExited(at time.Time, e Exited) *Record {
	ctxID, _ := strings.CutPrefix(e.Scope, "context:")
	if ctxID == e.Scope {
		ctxID = ""
	}
	if e.Stderr == nil {
		e.Stderr = []string{}
	}
	return &Record{Time: at, ContextID: ctxID, Principal: e.Principal, Transport: upstream, Capability: string(KindUpstreamExited),
		Decision: allow, Outcome: OutcomeError, Reason: "upstream " + e.Upstream + " exited: " + e.Status, Error: e.Status,
		Extra: jsonOf(map[string]any{"upstream": e.Upstream, "scope": e.Scope, "status": e.Status, "stderr": e.Stderr})}
}

// Approve records op approving declaration declarationID (of context
// contextID, "" if unknown); err is why it could not be.
func Approve(at time.Time, op Operator, declarationID, contextID, reason string, err error) *Record {
	return decision(at, op, KindApprove, declarationID, contextID, reason, err)
}

// Deny records op denying declaration declarationID; reason is shown to
// the agent.
func Deny(at time.Time, op Operator, declarationID, contextID, reason string, err error) *Record {
	return decision(at, op, KindDeny, declarationID, contextID, reason, err)
}

// decision: the order itself was allowed; a failure to carry it out is
// the outcome error.
func decision(at time.Time, op Operator, kind Kind, declarationID, contextID, reason string, err error) *Record {
	r := &Record{Time: at, ContextID: contextID, Principal: op.principal(), Transport: op.Transport, Capability: string(kind),
		Decision: allow, Outcome: OutcomeOK, Reason: reason, Extra: jsonOf(map[string]string{"declaration_id": declarationID})}
	if err != nil {
		r.Outcome, r.Error = OutcomeError, err.Error()
	}
	return r
}

// Phase records op's order to put context contextID in phase, refused
// (deny, error) when err is not nil.
func Phase(at time.Time, op Operator, contextID, phase, reason string, err error) *Record {
	r := &Record{Time: at, ContextID: contextID, Principal: op.principal(), Transport: op.Transport, Capability: string(KindPhase),
		Phase: phase, Decision: allow, Outcome: OutcomeOK, Reason: reason}
	refused(r, err)
	return r
}

// ChildContext records op's order to create a child context: cx is the
// context created (nil if none was), err why the order failed.
func ChildContext(at time.Time, op Operator, cx *Context, reason string, err error) *Record {
	r := &Record{Time: at, Principal: op.principal(), Transport: op.Transport, Capability: string(KindChildContext),
		Decision: allow, Outcome: OutcomeOK, Reason: reason}
	if cx != nil {
		r.ContextID, r.Phase = cx.ID, cx.Phase
		r.Extra = jsonOf(map[string]any{"parent": cx.Parent, "policy": cx.Policy, "pools": cx.Pools})
	}
	refused(r, err)
	return r
}

// ContextTask records op's order to give context contextID (in phase)
// its task text t: its digest and size, never the text. err is why the
// task was refused or could not be stored.
func ContextTask(at time.Time, op Operator, contextID, phase, reason string, t Task, err error) *Record {
	r := &Record{Time: at, ContextID: contextID, Principal: op.principal(), Transport: op.Transport, Capability: string(KindContextTask),
		Phase: phase, Decision: allow, Outcome: OutcomeOK, Reason: reason,
		Extra: jsonOf(map[string]any{"input": t.Input, "sha256": t.SHA256, "bytes": t.Bytes})}
	refused(r, err)
	return r
}

// Endorse records one endorsement act in context contextID by principal
// by ("operator:alice", or "elicitation:alice" for the approver at the
// client) over transport: each value's argument, id and keyed hash, never
// the value. err is why the act failed (nothing to endorse, the store).
func Endorse(at time.Time, by, transport, contextID, reason string, e Endorsement, err error) *Record {
	// Maps, not structs: the extra's bytes are those the endorsements
	// written before this constructor existed carry (sorted keys, a null
	// list when there was nothing to endorse).
	var endorsed []map[string]any
	for _, v := range e.Values {
		entry := map[string]any{"arg": v.Arg, "id": v.ID, "value_hmac": v.ValueHMAC}
		if v.Already {
			entry["already"] = true
		}
		endorsed = append(endorsed, entry)
	}
	extra := map[string]any{"endorsed": endorsed}
	if e.DeclarationID != "" {
		extra["declaration_id"] = e.DeclarationID
	}
	if e.Skipped != nil {
		skipped := make([]map[string]any, 0, len(e.Skipped))
		for _, s := range e.Skipped {
			skipped = append(skipped, map[string]any{"arg": s.Arg, "why": s.Why})
		}
		extra["skipped"] = skipped
	}
	r := &Record{Time: at, ContextID: contextID, Principal: by, Transport: transport, Capability: string(KindEndorse),
		Decision: allow, Outcome: OutcomeOK, Reason: reason, Extra: jsonOf(extra)}
	refused(r, err)
	return r
}

// KillSwitch records a change of the kill switch, made first in the kill
// switch file. Its time is left to the writer: it is recorded when some
// process notices the change, k.At says when it was made.
func KillSwitch(k Kill) *Record {
	return &Record{Principal: operatorPrefix + k.By, Transport: cli, Capability: string(KindKillSwitch),
		Decision: allow, Outcome: OutcomeOK, Reason: k.Reason,
		Extra: jsonOf(map[string]any{"engaged": k.Engaged, "change": k.ID, "changed_at": k.At.UTC()})}
}

// Reload records operator by's reload of the configuration from file.
func Reload(at time.Time, by, file string) *Record {
	return &Record{Time: at, Principal: operatorPrefix + by, Transport: signal, Capability: string(KindReload),
		Decision: allow, Outcome: OutcomeOK, Reason: "configuration reloaded from " + file}
}

// ReloadRefusal records a reload refused (the configuration did not load
// or cannot be applied): the previous one stays in force.
func ReloadRefusal(at time.Time, by string, err error) *Record {
	return &Record{Time: at, Principal: operatorPrefix + by, Transport: signal, Capability: string(KindReload),
		Decision: deny, Outcome: OutcomeDenied, Reason: "reload refused; previous configuration kept", Error: err.Error()}
}

// Rotation records operator by moving records first..last into the sealed
// segment named segment, whose last hash is head. Its time is the writer's.
func Rotation(by, segment string, first, last int64, head string) *Record {
	return &Record{Principal: operatorPrefix + by, Transport: cli, Capability: string(KindRotation), Decision: allow, Outcome: OutcomeOK,
		Reason: fmt.Sprintf("records %d..%d moved to a sealed segment", first, last),
		Extra:  jsonOf(map[string]any{"segment": segment, "first": first, "last": last, "head": head})}
}

// ConsoleLogin records op signing in to the console (failure: why not).
func ConsoleLogin(at time.Time, op Operator, reason string, failure error) *Record {
	return operatorAction(at, op, KindConsoleLogin, reason, failure)
}

// ConsoleLogout records op signing out of the console.
func ConsoleLogout(at time.Time, op Operator, reason string, failure error) *Record {
	return operatorAction(at, op, KindConsoleLogout, reason, failure)
}

func operatorAction(at time.Time, op Operator, kind Kind, reason string, failure error) *Record {
	r := &Record{Time: at, Principal: op.principal(), Transport: op.Transport, Capability: string(kind),
		Decision: allow, Outcome: OutcomeOK, Reason: reason}
	refused(r, failure)
	return r
}

// refused marks an operator's order that failed: refused, with its error.
func refused(r *Record, err error) {
	if err != nil {
		r.Decision, r.Outcome, r.Error = deny, OutcomeError, err.Error()
	}
}
