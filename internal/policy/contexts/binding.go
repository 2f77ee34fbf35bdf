package contexts

import (
	"errors"
	"slices"
	"strconv"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// Binding is what one credential (a static role token, an OAuth
// role_mapping rule) allows of the contexts its calls run in. The zero
// Binding allows what the principal may: its default context of the role,
// or any child of it a handle names.
//
// A context handle narrows what a client reaches only if the client cannot
// simply leave it out: without a binding, the same token with no
// Airlock-Context header runs in the wider default context (issue 26 item
// 2). A bound credential cannot opt out.
type Binding struct {
	// Context, when set, is the id of the context the credential is bound
	// to: a request naming none runs in it, and a handle may name only it or
	// a context under it.
	Context string
	// Required: the credential's calls never run in a default context; a
	// request must name a child context (or be bound to one).
	Required bool
}

// IsZero reports whether b allows what the principal may.
func (b Binding) IsZero() bool { return b == Binding{} }

// String is a stable form of b, for telling two credentials' bindings apart.
func (b Binding) String() string {
	return b.Context + "/" + strconv.FormatBool(b.Required)
}

// Why Admit refuses; each comes wrapped in a *violation.Error.
var (
	// ErrForeign: the context is another principal's.
	ErrForeign = errors.New("context of another principal")
	// ErrOtherRole: the context belongs to another role of the principal.
	ErrOtherRole = errors.New("context of another role")
	// ErrOutsideBinding: the credential is bound to a context that is not
	// this one nor one of its ancestors.
	ErrOutsideBinding = errors.New("context outside the credential's binding")
	// ErrContextRequired: the credential must name a child context.
	ErrContextRequired = errors.New("the credential requires a child context")
)

// Admit checks that chain — a context and its ancestors, the context first,
// as the runner loads it — may serve a call of principal in role under b.
// The refusal is a *violation.Error for the agent:
//
//   - another principal's context is CONTEXT_INVALID, worded as for a
//     handle never issued (a handle proves nothing to anyone else);
//   - a context of another role is CONTEXT_INVALID: a phase or a policy set
//     for one role must not serve the other (issue 26 item 11);
//   - under a bound credential, a context that is not the bound one nor
//     under it is CONTEXT_OUTSIDE_BINDING;
//   - under a credential that requires a context, a default context is
//     CONTEXT_REQUIRED.
func (b Binding) Admit(chain []*Context, principal, role string) error {
	if len(chain) == 0 {
		return violation.New(violation.ContextInvalid, "the context could not be resolved")
	}
	cx := chain[0]
	switch {
	case cx.Principal != principal:
		return violation.Wrap(violation.ContextInvalid, ErrForeign, "the context handle is not one this server issued")
	case cx.Role != role:
		return violation.Wrap(violation.ContextInvalid, ErrOtherRole, "context %s belongs to another role of this principal; this credential maps to role %s", cx.ID, role)
	case b.Context != "" && !slices.ContainsFunc(chain, func(c *Context) bool { return c.ID == b.Context }):
		return violation.Wrap(violation.ContextOutsideBinding, ErrOutsideBinding, "this credential is bound to context %s; context %s is not it nor under it", b.Context, cx.ID)
	case b.Required && cx.IsDefault():
		return violation.Wrap(violation.ContextRequired, ErrContextRequired, "this credential must run in a child context: send the Airlock-Context handle the operator gave you")
	}
	return nil
}
