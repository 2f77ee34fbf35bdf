// Package violation defines the only error text that may reach an agent.
//
// Every refusal Airlock gives an agent carries a stable [Code] (for example
// PATH_OUTSIDE_POOLS) and a short message written for the agent. The internal
// cause, which may hold host paths, SQL errors or stack-adjacent detail, rides
// along in [Error.Err] for logs and the audit trail and is never rendered to
// the agent. Anything that is not an *Error becomes [Internal] at the boundary.
//
// The same bad input must always produce the same code (seed 000, "determinism
// guarantee"), so codes are constants and never derived from error strings.
package violation

import (
	"errors"
	"fmt"
)

// Code is a stable, machine-readable violation type.
type Code string

// The violation codes. The first six come from the source-binding design;
// the rest name the other ways the runner can end a call.
const (
	PathOutsidePools     Code = "PATH_OUTSIDE_POOLS"
	UnknownPoolID        Code = "UNKNOWN_POOL_ID"
	PoolNotSelected      Code = "POOL_NOT_SELECTED"
	IntegrityFailure     Code = "INTEGRITY_FAILURE"
	NetworkAccessAttempt Code = "NETWORK_ACCESS_ATTEMPT"
	WriteAttempt         Code = "WRITE_ATTEMPT"

	InvalidArguments  Code = "INVALID_ARGUMENTS"
	UnknownTool       Code = "UNKNOWN_TOOL"
	KillSwitchEngaged Code = "KILL_SWITCH_ENGAGED"
	PhaseBlocked      Code = "PHASE_BLOCKED"
	PolicyDenied      Code = "POLICY_DENIED"
	// ProvenanceDenied: a policy rule whose condition reads the provenance
	// of the need's arguments denied it (a value from untrusted content
	// where the policy wants the principal's).
	ProvenanceDenied   Code = "PROVENANCE_DENIED"
	ApprovalRequired   Code = "APPROVAL_REQUIRED"
	LimitExceeded      Code = "LIMIT_EXCEEDED"
	PreconditionFailed Code = "PRECONDITION_FAILED"
	NotFound           Code = "NOT_FOUND"
	Unavailable        Code = "UNAVAILABLE"
	AuditUnavailable   Code = "AUDIT_UNAVAILABLE"
	Cancelled          Code = "CANCELLED" // the client cancelled the call (or went away) before it finished
	Internal           Code = "INTERNAL_ERROR"

	// CredentialExposed: a pipeline wrote a credential it was given
	// (package credentials) into an output file; its outputs are withheld
	// (stdout and stderr are scrubbed instead).
	CredentialExposed Code = "CREDENTIAL_EXPOSED"

	// ApprovalInvalid: an approval answer that does not answer a question
	// the server asked (none asked, altered, replayed, expired, another
	// declaration's, or the role's approver is the operator).
	ApprovalInvalid Code = "APPROVAL_INVALID"

	// Session and context refusals at the transport edge (HTTP status 400/403/404).
	SessionRequired Code = "SESSION_REQUIRED" // a session-oriented request without Mcp-Session-Id
	SessionUnknown  Code = "SESSION_UNKNOWN"  // an id the server never issued
	SessionExpired  Code = "SESSION_EXPIRED"  // closed, deleted or idle too long
	SessionForeign  Code = "SESSION_FOREIGN"  // issued to another principal
	ContextInvalid  Code = "CONTEXT_INVALID"  // a context handle that is forged, another principal's or another role's
	// ContextOutsideBinding: HTTP 403, the credential is bound to a context
	// (a token's or role_mapping rule's context) and the request named one
	// outside it.
	ContextOutsideBinding Code = "CONTEXT_OUTSIDE_BINDING"
	// ContextRequired: HTTP 403, the credential must run in a child
	// context (require_context) and the request named none.
	ContextRequired Code = "CONTEXT_REQUIRED"

	// Refusals at the transport edge, before any tool runs (package edge,
	// package wire). Audited per remote address and cause, aggregated.
	Unauthenticated Code = "UNAUTHENTICATED" // HTTP 401: no bearer token, or one not recognised
	OriginRefused   Code = "ORIGIN_REFUSED"  // HTTP 403: a browser Origin not on the allow-list
	// InsufficientScope: HTTP 403, a valid OAuth access token that no
	// transports.http.oauth.role_mapping rule maps to a role.
	InsufficientScope Code = "INSUFFICIENT_SCOPE"
	MessageTooLarge   Code = "MESSAGE_TOO_LARGE" // HTTP 413, or a stdio line over max_message_bytes
	MalformedMessage  Code = "MALFORMED_MESSAGE" // not one strict JSON-RPC message (duplicate keys, depth, batch, id, params, content type)
	ConnectionLimit   Code = "CONNECTION_LIMIT"  // a connection closed or refused at a connection bound
	RequestTimeout    Code = "REQUEST_TIMEOUT"   // HTTP 408: the body did not arrive in time
	// CSRFRefused: HTTP 403, a console form posted without its session's
	// CSRF token (or with another's): a cross-site request forgery.
	CSRFRefused Code = "CSRF_REFUSED"

	// Upstream MCP servers behind declare_need (comm.mcp, issue 15).
	UpstreamUnavailable    Code = "UPSTREAM_UNAVAILABLE"             // not configured, would not start, or the connection failed
	UpstreamTimeout        Code = "UPSTREAM_TIMEOUT"                 // no answer within the upstream's timeout_ms
	UpstreamResultTooLarge Code = "UPSTREAM_RESULT_TOO_LARGE"        // the answer exceeded the upstream's max_result_bytes
	UpstreamNotApproved    Code = "UPSTREAM_DEFINITION_NOT_APPROVED" // the tool's definition was never approved by an operator
	UpstreamChanged        Code = "UPSTREAM_DEFINITION_CHANGED"      // the upstream lists the tool differently from the approved pin (rug pull)
	UpstreamArguments      Code = "UPSTREAM_ARGUMENTS_INVALID"       // the arguments do not satisfy the pinned input schema
	UpstreamError          Code = "UPSTREAM_ERROR"                   // the upstream answered with an error; its text comes back fenced
	// Brokered upstream credentials (issue 23 item 3): a configured secret
	// is revoked or invalid; a token exchange was refused by the provider,
	// the caller's token expired, or the caller has no token to exchange.
	UpstreamCredential    Code = "UPSTREAM_CREDENTIAL_UNAVAILABLE"
	UpstreamTokenExchange Code = "UPSTREAM_TOKEN_EXCHANGE_REFUSED"
)

// Error is a refusal the agent may see: Code and Message are public, Err is
// the private cause kept for logs and audit.
type Error struct {
	Code    Code
	Message string // agent-safe: no host paths, no internal error text
	Err     error  // private cause; may be nil
}

// New returns an *Error with an agent-safe message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an *Error carrying cause as its private detail.
func Wrap(code Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
}

// Error renders code, message and (for logs only) the cause.
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Public renders only what the agent may see.
func (e *Error) Public() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the private cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is an *Error with the same code, so callers can
// write errors.Is(err, violation.New(violation.PathOutsidePools, "")).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// CodeOf returns the code of the first *Error in err's chain.
func CodeOf(err error) (Code, bool) {
	var v *Error
	if errors.As(err, &v) {
		return v.Code, true
	}
	return "", false
}
