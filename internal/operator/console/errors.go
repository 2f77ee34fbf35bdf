package console

import "errors"

// Errors of Admin.Login and of the form checks.
var (
	// ErrUnknownToken: the token is no credential at all.
	ErrUnknownToken = errors.New("token not recognised")
	// ErrNotAdmin: the token is a credential of a role other than
	// transports.http.console_role.
	ErrNotAdmin = errors.New("token's role is not transports.http.console_role")
	// ErrReasonRequired: a state-changing form came without a reason.
	ErrReasonRequired = errors.New("a reason is required")
	// ErrBadFilter: an audit browser filter that does not parse.
	ErrBadFilter = errors.New("bad audit filter")
)

// FilterError says which audit filter field is wrong.
type FilterError struct {
	Field string
	Err   error
}

func (e *FilterError) Error() string { return "filter " + e.Field + ": " + e.Err.Error() }
func (e *FilterError) Unwrap() error { return e.Err }
