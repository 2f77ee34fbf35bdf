package testidp

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Token exchange (RFC 8693, issue 23 item 3): a client whose Exchange
// lists an audience may trade a subject's access token from this
// provider for one with that audience, on the subject's behalf; the
// issued token names the client as the actor (act.sub). Anything else —
// another audience, a client without Exchange, an expired or foreign
// subject token (zitadel's provider checks it) — is refused.

var _ op.TokenExchangeStorage = (*store)(nil)

var errExchange = errors.New("token exchange refused")

func (s *store) ValidateTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exchanges++
	c, ok := s.clients[req.GetClientID()]
	aud := req.GetAudience()
	if !ok || len(aud) == 0 || slices.ContainsFunc(aud, func(a string) bool { return !slices.Contains(c.Exchange, a) }) {
		return oidc.ErrInvalidTarget().WithDescription("this client may not exchange for that audience").WithParent(errExchange)
	}
	switch req.GetRequestedTokenType() {
	case "":
		req.SetRequestedTokenType(oidc.AccessTokenType)
	case oidc.AccessTokenType:
	default:
		return oidc.ErrInvalidRequest().WithDescription("only access tokens are issued").WithParent(errExchange)
	}
	return nil
}

func (s *store) CreateTokenExchangeRequest(context.Context, op.TokenExchangeRequest) error {
	return nil
}

func (s *store) GetPrivateClaimsFromTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) (map[string]any, error) {
	return map[string]any{"scope": strings.Join(req.GetScopes(), " "), "act": map[string]any{"sub": req.GetClientID()}}, nil
}

func (s *store) SetUserinfoFromTokenExchangeRequest(context.Context, *oidc.UserInfo, op.TokenExchangeRequest) error {
	return nil
}

// Exchanges is how many token exchanges were asked for (granted or not).
func (p *IdP) Exchanges() int {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	return p.store.exchanges
}
