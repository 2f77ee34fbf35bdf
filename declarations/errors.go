package declarations

import "errors"

// Errors. Every error this package returns wraps exactly one of these, so
// callers branch with errors.Is and never on the text. The text of an error
// names the declaration id and the states involved; it never names another
// session, and it never repeats the content of a field.
var (
	// ErrInvalid: a need, a decision, an actor or a result is malformed.
	// The error is a *FieldError naming the field.
	ErrInvalid = errors.New("invalid")
	// ErrNotFound: no declaration has this id.
	ErrNotFound = errors.New("declaration not found")
	// ErrExists: Store.Create was given an id that is already stored.
	ErrExists = errors.New("declaration already exists")
	// ErrState: the declaration is not in a state the operation applies
	// to, and none of the more specific errors below says why.
	ErrState = errors.New("declaration is not in the required state")
	// ErrAlreadyConsumed: Begin found the approval already used: the
	// declaration is executing, executed or failed. A retry needs
	// Retry and a fresh approval.
	ErrAlreadyConsumed = errors.New("approval already consumed")
	// ErrExpired: the declaration or its approval passed its deadline;
	// the declaration is now (or was already) expired.
	ErrExpired = errors.New("declaration expired")
	// ErrWrongContext: the declaration belongs to another context.
	ErrWrongContext = errors.New("declaration belongs to another context")
	// ErrNoAttemptsLeft: Retry of a failed declaration that has used all
	// of its executions (ManagerOptions.MaxAttempts).
	ErrNoAttemptsLeft = errors.New("no execution attempts left")
	// ErrFingerprint: the stored need no longer hashes to the fingerprint
	// recorded when it was declared, so the approval does not cover it.
	// Only a store that was written to behind the Manager's back produces
	// this.
	ErrFingerprint = errors.New("need does not match its approved fingerprint")
)

// FieldError reports the first invalid field of a need or of a Manager
// call. Field is the JSON path of the field ("parameters.url",
// "justification.user_request"), or "" for the input as a whole.
//
// Reason is written for the agent: it says which rule was broken and never
// repeats the field's content, so Error() is safe to return to the agent
// that sent the need (as an INVALID_ARGUMENTS violation).
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return "need: " + e.Reason
	}
	return e.Field + ": " + e.Reason
}

// Unwrap returns ErrInvalid.
func (e *FieldError) Unwrap() error { return ErrInvalid }

func invalid(field, reason string) *FieldError {
	return &FieldError{Field: field, Reason: reason}
}
