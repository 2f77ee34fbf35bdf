// Package testidp is a real OpenID Provider for Airlock's tests: zitadel's
// OIDC provider library (pkg/op) serving discovery, a key set, the token
// endpoint (client-credentials grant, and token exchange for clients
// allowed it) and introspection on a listener the caller gives it, with keys that can be rotated. Tests and the e2e suite
// (cmd/testidp) use it; it is never part of the airlock binary.
package testidp

import (
	"context"
	"crypto/rsa"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Client is a confidential client of the provider.
type Client struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
	// Audience is what its access tokens carry as aud (the resource they
	// are for); empty means the client id, zitadel's default.
	Audience []string `json:"audience,omitempty"`
	Groups   []string `json:"groups,omitempty"`
	// Lifetime of its access tokens (default 5 minutes; negative mints
	// tokens that are already expired).
	Lifetime time.Duration `json:"lifetime_ns,omitempty"`
	// Opaque clients get opaque access tokens (introspection), others JWTs.
	Opaque bool `json:"opaque,omitempty"`
	// Exchange are the audiences the client may ask for by token exchange
	// (RFC 8693, exchange.go); none: it may not exchange.
	Exchange []string `json:"exchange,omitempty"`
}

// IdP is a running provider.
type IdP struct {
	// Issuer is the provider's issuer URL (http://127.0.0.1:port).
	Issuer string
	store  *store
	srv    *http.Server
}

// ErrNotLoopback refuses a listener other hosts could reach: this
// provider signs tokens for whoever asks with a known secret.
var ErrNotLoopback = errors.New("testidp: listener must be on loopback")

// Start serves a provider on ln until Close.
func Start(ln net.Listener, clients []Client) (*IdP, error) {
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok || !addr.IP.IsLoopback() {
		return nil, ErrNotLoopback
	}
	issuer := "http://" + ln.Addr().String()
	k, err := newSigningKey()
	if err != nil {
		return nil, err
	}
	st := &store{Storage: storage.NewStorage(storage.NewUserStore(issuer)), current: k, keys: []*signingKey{k},
		clients: map[string]Client{}, tokens: map[string]issued{}}
	for _, c := range clients {
		st.clients[c.ID] = c
	}
	cfg := &op.Config{
		CryptoKey:                sha256.Sum256([]byte(issuer)),
		CodeMethodS256:           true,
		AuthMethodPost:           true,
		GrantTypeRefreshToken:    false,
		DefaultLogoutRedirectURI: "/",
	}
	provider, err := op.NewProvider(cfg, st, op.StaticIssuer(issuer), op.WithAllowInsecure(),
		op.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		return nil, fmt.Errorf("testidp: %w", err)
	}
	p := &IdP{Issuer: issuer, store: st, srv: &http.Server{Handler: provider, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Close stops the provider.
func (p *IdP) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return p.srv.Shutdown(ctx)
}

// Rotate makes a new key the signing key and publishes only it: tokens
// signed with the old key no longer verify for anyone who refetches the
// key set. It returns the new key id.
func (p *IdP) Rotate() (string, error) {
	k, err := newSigningKey()
	if err != nil {
		return "", err
	}
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	p.store.current, p.store.keys = k, []*signingKey{k}
	return k.id, nil
}

// SigningKey is the current signing key and its id, for tests that craft
// tokens a real provider would not issue (alg none, bad claims).
func (p *IdP) SigningKey() (string, *rsa.PrivateKey) {
	p.store.mu.Lock()
	defer p.store.mu.Unlock()
	return p.store.current.id, p.store.current.key
}
