package credentials

import (
	"context"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/config"
)

// Brokered credentials for upstream MCP servers (issue 23 item 3): the
// secrets a role's call to one upstream carries, read at each call as
// every credential is, and recorded in the call's Scrubber so the answer,
// the errors and the tool list are scrubbed of them.

// Upstream is what one call to an upstream carries: HTTP headers (an
// HTTP upstream) or NAME=value variables (a stdio upstream), and the
// Scrubber of every secret among them.
type Upstream struct {
	Headers  map[string]string
	Env      []string
	Scrubber *Scrubber
}

// Exchanger obtains a token for a call to an upstream with a
// token_exchange, given the client secret (package tokenexchange, handed
// over by the runner in Options: this package reaches no network). The
// token goes out as "Authorization: Bearer <token>".
type Exchanger interface {
	Exchange(ctx context.Context, up config.Upstream, clientSecret string) (token string, err error)
}

// ForUpstream returns the credentials of role's call to up, recording
// every secret in their Scrubber: each credential of the role that names up, and, if
// up has a token_exchange, the token Options.Exchanger gives for the
// caller ctx carries (with the client secret read here; no Exchanger
// refuses such an upstream). A credential that cannot be read, or an
// exchange that fails, fails the call (*Error, or the Exchanger's error):
// a call is never made without the credentials it was configured with.
func (s *Set) ForUpstream(ctx context.Context, role string, up config.Upstream) (Upstream, error) {
	sc := &Scrubber{}
	out := Upstream{Headers: map[string]string{}, Scrubber: sc}
	if s != nil {
		for _, c := range *s.creds.Load() {
			if !slices.Contains(c.Roles, role) || !c.ReachesUpstream(up.ID) {
				continue
			}
			v, err := s.read(c)
			if err != nil {
				return Upstream{}, err
			}
			if c.Header != nil && slices.Contains(c.Header.Upstreams, up.ID) {
				rendered := strings.Replace(c.Header.Value, config.SecretPlaceholder, v, 1)
				sc.add(c.ID, rendered, v)
				out.Headers[c.Header.Name] = rendered
			} else {
				sc.add(c.ID, v)
				out.Env = append(out.Env, c.Env.Name+"="+v)
			}
		}
	}
	te := up.TokenExchange
	if te == nil {
		return out, nil
	}
	id := up.ID + ".token_exchange"
	if s == nil {
		return Upstream{}, &Error{ID: id, Reason: "no credentials configured", Err: ErrRevoked}
	}
	secret, err := s.read(config.Credential{ID: id, Secret: te.ClientSecret})
	if err != nil {
		return Upstream{}, err
	}
	sc.add(id+".client_secret", secret)
	if s.exchanger == nil {
		return Upstream{}, &Error{ID: id, Reason: "no exchanger", Err: ErrRevoked}
	}
	tok, err := s.exchanger.Exchange(ctx, up, secret)
	if err != nil {
		return Upstream{}, err
	}
	sc.add(id, "Bearer "+tok, tok)
	out.Headers["Authorization"] = "Bearer " + tok
	return out, nil
}
