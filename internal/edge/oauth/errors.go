package oauth

import "errors"

// Why a token was refused. Each is wrapped with detail for the audit
// trail (never the token); callers test with errors.Is.
var (
	ErrMalformed      = errors.New("token is not a well-formed JWT")
	ErrUnknownIssuer  = errors.New("token issuer is not configured")
	ErrAlgorithm      = errors.New("signature algorithm not allowed")
	ErrUnknownKey     = errors.New("no key of the issuer matches the token's kid")
	ErrSignature      = errors.New("signature does not verify")
	ErrAudience       = errors.New("token audience is not this resource")
	ErrExpired        = errors.New("token expired")
	ErrNotYetValid    = errors.New("token not valid yet")
	ErrClaims         = errors.New("token claims invalid")
	ErrInactive       = errors.New("introspection says the token is not active")
	ErrIssuerDown     = errors.New("authorization server unavailable")
	ErrNoIntrospect   = errors.New("opaque token and no issuer has introspection configured")
	ErrMetadataIssuer = errors.New("authorization server metadata names another issuer")
)

// Kind is a short fixed name for err's cause, for counting refusals apart
// without letting a token's contents mint keys.
func Kind(err error) string {
	for _, e := range []error{ErrMalformed, ErrUnknownIssuer, ErrAlgorithm, ErrUnknownKey, ErrSignature,
		ErrAudience, ErrExpired, ErrNotYetValid, ErrClaims, ErrInactive, ErrIssuerDown, ErrNoIntrospect} {
		if errors.Is(err, e) {
			return e.Error()
		}
	}
	return "token refused"
}
