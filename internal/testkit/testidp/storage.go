package testidp

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// store is the provider's storage: zitadel's in-memory example storage
// for everything a client-credentials provider does not use, with the
// signing keys (rotatable), the service clients, their tokens and
// introspection replaced.
type store struct {
	*storage.Storage

	mu        sync.Mutex
	current   *signingKey
	keys      []*signingKey // published in the key set
	clients   map[string]Client
	tokens    map[string]issued
	exchanges int // token exchanges asked for (exchange.go)
}

type issued struct {
	client Client
	scopes []string
	exp    time.Time
}

var (
	_ op.Storage                  = (*store)(nil)
	_ op.ClientCredentialsStorage = (*store)(nil)
)

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *signingKey) Key() any                                    { return k.key }
func (k *signingKey) ID() string                                  { return k.id }

type publicKey struct{ k *signingKey }

func (p publicKey) ID() string                         { return p.k.id }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return &p.k.key.PublicKey }

func newSigningKey() (*signingKey, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &signingKey{id: uuid.NewString(), key: k}, nil
}

func (s *store) SigningKey(context.Context) (op.SigningKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.current, nil
}

func (s *store) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *store) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]op.Key, 0, len(s.keys))
	for _, k := range s.keys {
		out = append(out, publicKey{k})
	}
	return out, nil
}

var errClient = errors.New("wrong client id or secret")

func (s *store) ClientCredentials(_ context.Context, id, secret string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok || c.Secret != secret {
		return nil, errClient
	}
	return opClient{c}, nil
}

func (s *store) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.clients[id]
	if !ok {
		return nil, errClient
	}
	return &oidc.JWTTokenRequest{Subject: c.ID, Audience: c.Audience, Scopes: scopes}, nil
}

// AuthorizeClientIDSecret authenticates a client at the introspection
// endpoint (the resource server) as at the token endpoint.
func (s *store) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[id]; ok && c.Secret == secret {
		return nil
	}
	return errClient
}

func (s *store) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.clients[id]; ok {
		return opClient{c}, nil
	}
	return nil, errClient
}

func (s *store) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[req.GetSubject()]
	if te, ok := req.(op.TokenExchangeRequest); ok {
		c = s.clients[te.GetClientID()] // the exchanging client's lifetime
	}
	life := c.Lifetime
	if life == 0 {
		life = 5 * time.Minute
	}
	id := uuid.NewString()
	exp := time.Now().Add(life)
	s.tokens[id] = issued{client: c, scopes: req.GetScopes(), exp: exp}
	return id, exp, nil
}

// GetPrivateClaimsFromScopes puts the granted scopes (RFC 9068's scope
// claim) and the client's groups into its JWT access tokens.
func (s *store) GetPrivateClaimsFromScopes(_ context.Context, _, clientID string, scopes []string) (map[string]any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	claims := map[string]any{"scope": strings.Join(scopes, " ")}
	if g := s.clients[clientID].Groups; len(g) > 0 {
		claims["groups"] = g
	}
	return claims, nil
}

func (s *store) SetIntrospectionFromToken(_ context.Context, in *oidc.IntrospectionResponse, tokenID, subject, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tokens[tokenID]
	if !ok || time.Now().After(t.exp) {
		return errors.New("token is not active")
	}
	in.Subject, in.ClientID, in.Scope = subject, t.client.ID, t.scopes
	in.Audience, in.Expiration = t.client.Audience, oidc.FromTime(t.exp)
	return nil
}

// opClient is a Client as zitadel's provider sees it: a confidential
// service client that may use the client-credentials grant only.
type opClient struct{ c Client }

func (o opClient) GetID() string                       { return o.c.ID }
func (o opClient) RedirectURIs() []string              { return nil }
func (o opClient) PostLogoutRedirectURIs() []string    { return nil }
func (o opClient) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (o opClient) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (o opClient) ResponseTypes() []oidc.ResponseType  { return nil }
func (o opClient) GrantTypes() []oidc.GrantType {
	if len(o.c.Exchange) > 0 {
		return []oidc.GrantType{oidc.GrantTypeClientCredentials, oidc.GrantTypeTokenExchange}
	}
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}
func (o opClient) LoginURL(string) string               { return "" }
func (o opClient) IDTokenLifetime() time.Duration       { return time.Hour }
func (o opClient) DevMode() bool                        { return true }
func (o opClient) IsScopeAllowed(string) bool           { return true }
func (o opClient) IDTokenUserinfoClaimsAssertion() bool { return false }
func (o opClient) ClockSkew() time.Duration             { return 0 }
func (o opClient) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (o opClient) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (o opClient) AccessTokenType() op.AccessTokenType {
	if o.c.Opaque {
		return op.AccessTokenTypeBearer
	}
	return op.AccessTokenTypeJWT
}
