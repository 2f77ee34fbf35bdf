package declarations

import (
	"errors"
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/urlnorm"
)

// Normalize puts a comm.fetch need's URL in its normal form (package
// urlnorm), the form the policy judges and the fetcher requests, so that
// the approver is shown, and the declaration stores, exactly what will be
// fetched: an approver must not read "/x/../gated/a" while /gated/a is
// what the origin serves (issue 10, item 1; TestNormalize). Other
// operations are left alone. A URL with no normal form is a *FieldError
// for parameters.url. Call it on a valid need; [Manager.Declare] does.
func (n *Need) Normalize() error {
	if n.Operation != OpFetch {
		return nil
	}
	norm, err := urlnorm.Normalize(n.Parameters.URL)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, urlnorm.ErrInvalid) {
			msg = strings.TrimSuffix(msg, ": "+urlnorm.ErrInvalid.Error())
		}
		return invalid("parameters.url", msg)
	}
	n.Parameters.URL = norm
	// Escaping can lengthen the URL past its limit; judge the result.
	return n.validateParameters()
}
