package comm

import (
	"context"
	"errors"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// The sentinel errors. Every refusal this package returns is an *[Error]
// whose Kind is one of these, so callers use errors.Is and [Code], never
// string matching.
var (
	// ErrInvalidURL: the URL does not parse, is not absolute, is too long
	// or carries user info ("https://user:pass@host" is a classic way to
	// make a URL read as a different host, and leaks credentials).
	ErrInvalidURL = errors.New("invalid URL")
	// ErrScheme: a scheme other than https, or http for a host not in
	// FetchOptions.AllowHTTPHosts (file:, gopher:, ftp: ... never).
	ErrScheme = errors.New("scheme not allowed")
	// ErrHostDenied: HostRules refused the URL (first URL or a redirect
	// target); the rules' own error is the private cause.
	ErrHostDenied = errors.New("host not allowed by policy")
	// ErrRedirectDenied: the caller's [HopRules] denied a redirect target
	// (a rule, or the policy's network section): the code is the one a
	// direct request for the target gets, POLICY_DENIED.
	ErrRedirectDenied = errors.New("redirect target denied by policy")
	// ErrRedirectNeedsApproval: the caller's [HopRules] asks for approval
	// of a redirect target; the fetch stops (APPROVAL_REQUIRED).
	ErrRedirectNeedsApproval = errors.New("redirect target needs approval")
	// ErrPrivateAddress: the connection would reach a loopback, private,
	// link-local, metadata, CGNAT, multicast or otherwise reserved
	// address outside FetchOptions.AllowPrivate. Checked at connect time.
	ErrPrivateAddress = errors.New("address not allowed: private, loopback, link-local or reserved")
	// ErrTooManyRedirects: more than FetchOptions.MaxRedirects redirects.
	ErrTooManyRedirects = errors.New("too many redirects")
	// ErrTooLarge: the body exceeded FetchOptions.MaxBodyBytes.
	ErrTooLarge = errors.New("response too large")
	// ErrTimeout: the request (or query) did not finish in time.
	ErrTimeout = errors.New("timed out")
	// ErrBinary: the content is not text (image, PDF, archive, NUL bytes…).
	ErrBinary = errors.New("binary content refused")
	// ErrCharset: the text is in a character encoding this package cannot
	// convert to UTF-8.
	ErrCharset = errors.New("unsupported character encoding")
	// ErrRobots: the site's robots.txt disallows the URL for our user
	// agent, or the site's robots.txt answered with a server error.
	ErrRobots = errors.New("disallowed by robots.txt")
	// ErrStatus: the final response was not 2xx; Error.Status holds it.
	ErrStatus = errors.New("unexpected HTTP status")
	// ErrCredential: a credential configured for the request's host
	// could not be read (revoked: its file removed or emptied, its
	// variable unset; or invalid). The request is not sent without it.
	ErrCredential = errors.New("credential unavailable")
	// ErrUnavailable: the source could not be reached or answered in a
	// form that cannot be used (DNS failure, connection refused, TLS
	// failure, malformed search response).
	ErrUnavailable = errors.New("source unavailable")

	// ErrInvalidQuery: empty, over-long or malformed input to Search or
	// Query, or an SQL error reported by SQLite.
	ErrInvalidQuery = errors.New("invalid query")
	// ErrMultipleStatements: more than one SQL statement.
	ErrMultipleStatements = errors.New("only a single SQL statement is allowed")
	// ErrNotReadOnly: a statement that writes, attaches, changes pragmas or
	// loads extensions.
	ErrNotReadOnly = errors.New("only read-only SQL is allowed")
	// ErrQueryRefused: a read-only query that reads what comm.query does
	// not serve — a pragma (pragma_database_list names the database's
	// host path), sqlite_dbpage, dbstat — or calls load_extension; refused
	// by SQLite's authorizer when the statement is compiled.
	ErrQueryRefused = errors.New("not served by comm.query")
)

// Error is a refusal from one of the executors. Op, Kind, Detail and Status
// are agent-safe: Detail may name the requested URL, its host or an HTTP
// status, never a local path, an internal address or a driver's error text.
// Err is the private cause, for logs and the audit trail only.
type Error struct {
	Op     string // "fetch", "search" or "query"
	Kind   error  // one of the sentinel errors
	Detail string // agent-safe detail; may be empty
	Status int    // the HTTP status, for ErrStatus
	Err    error  // private cause; may be nil
}

func (e *Error) Error() string {
	s := e.Public()
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Public renders only what the agent may see.
func (e *Error) Public() string {
	s := "comm." + e.Op + ": " + e.Kind.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the sentinel and the private cause, so errors.Is matches
// both (for instance ErrHostDenied and the policy's own sentinel).
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

func newErr(op string, kind error, detail string, cause error) *Error {
	return &Error{Op: op, Kind: kind, Detail: detail, Err: cause}
}

// codes maps each sentinel to the violation code the runner reports. Order
// matters only for errors that wrap several sentinels: the first match wins,
// and the network-boundary refusals come first because they are the ones an
// operator must see.
var codes = []struct {
	err  error
	code violation.Code
}{
	{ErrPrivateAddress, violation.NetworkAccessAttempt},
	{ErrHostDenied, violation.NetworkAccessAttempt},
	{ErrScheme, violation.NetworkAccessAttempt},
	{ErrRedirectDenied, violation.PolicyDenied},
	{ErrRedirectNeedsApproval, violation.ApprovalRequired},
	{ErrNotReadOnly, violation.WriteAttempt},
	{ErrQueryRefused, violation.PolicyDenied},
	{ErrInvalidURL, violation.InvalidArguments},
	{ErrInvalidQuery, violation.InvalidArguments},
	{ErrMultipleStatements, violation.InvalidArguments},
	{ErrRobots, violation.PolicyDenied},
	{ErrTooManyRedirects, violation.LimitExceeded},
	{ErrTooLarge, violation.LimitExceeded},
	{ErrTimeout, violation.LimitExceeded},
	{ErrBinary, violation.Unavailable},
	{ErrCharset, violation.Unavailable},
	{ErrStatus, violation.Unavailable},
	{ErrUnavailable, violation.Unavailable},
	{ErrCredential, violation.Unavailable},
	{context.DeadlineExceeded, violation.LimitExceeded},
	{context.Canceled, violation.Unavailable},
}

// Code maps an error from this package to the violation code the runner
// reports to the agent:
//
//	ErrPrivateAddress, ErrHostDenied, ErrScheme           NETWORK_ACCESS_ATTEMPT
//	ErrRedirectDenied                                     POLICY_DENIED
//	ErrRedirectNeedsApproval                              APPROVAL_REQUIRED
//	ErrNotReadOnly                                        WRITE_ATTEMPT
//	ErrInvalidURL, ErrInvalidQuery, ErrMultipleStatements INVALID_ARGUMENTS
//	ErrRobots, ErrQueryRefused                            POLICY_DENIED
//	ErrTooManyRedirects, ErrTooLarge, ErrTimeout          LIMIT_EXCEEDED
//	ErrBinary, ErrCharset, ErrStatus, ErrUnavailable      UNAVAILABLE
//	ErrCredential                                         UNAVAILABLE
//
// A bare context.DeadlineExceeded is LIMIT_EXCEEDED, context.Canceled is
// UNAVAILABLE, and anything else (including nil) is INTERNAL_ERROR.
func Code(err error) violation.Code {
	if err != nil {
		for _, c := range codes {
			if errors.Is(err, c.err) {
				return c.code
			}
		}
	}
	return violation.Internal
}

// Violation converts an error from this package into the *violation.Error
// the agent sees: [Code] for the code, [Error.Public] for the message, and
// err itself as the private cause. An error that is not an *Error gets a
// generic message. Violation(nil) is nil.
func Violation(err error) *violation.Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return violation.Wrap(Code(err), err, "%s", e.Public())
	}
	return violation.Wrap(Code(err), err, "comm: the request failed")
}
