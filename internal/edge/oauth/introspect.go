package oauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
)

// introspection is the part of an RFC 7662 answer Airlock reads.
type introspection struct {
	Active   bool             `json:"active"`
	Scope    string           `json:"scope"`
	ClientID string           `json:"client_id"`
	Subject  string           `json:"sub"`
	Issuer   string           `json:"iss"`
	Audience jwt.Audience     `json:"aud"`
	Expiry   *jwt.NumericDate `json:"exp"`
	NotBef   *jwt.NumericDate `json:"nbf"`
}

// introspect asks each issuer with introspection configured about an
// opaque token, in configuration order; the first active answer that
// passes the same checks as a JWT (issuer, audience, exp, nbf, sub) wins.
func (v *Validator) introspect(ctx context.Context, raw string) (*Token, error) {
	if raw == "" || strings.ContainsAny(raw, " \t\r\n") {
		return nil, ErrMalformed
	}
	sum := sha256.Sum256([]byte(raw))
	if t, ok := v.cache.get(sum, v.now()); ok {
		return t, nil
	}
	var errs []error
	for _, is := range v.issuers {
		if is.cfg.Introspection == nil {
			continue
		}
		t, err := v.introspectAt(ctx, is, raw)
		if err == nil {
			v.cache.put(sum, t, v.now())
			return t, nil
		}
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil, ErrNoIntrospect
	}
	// One issuer's refusal is the cause to report when there is one;
	// otherwise an unavailable server.
	for _, e := range errs {
		if !errors.Is(e, ErrIssuerDown) {
			return nil, e
		}
	}
	return nil, errs[0]
}

func (v *Validator) introspectAt(ctx context.Context, is *issuer, raw string) (*Token, error) {
	endpoint, err := is.introspectionEndpoint(ctx)
	if err != nil {
		return nil, err
	}
	form := url.Values{"token": {raw}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIssuerDown, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 section 2.3.1: both parts form-encoded before basic auth.
	req.SetBasicAuth(url.QueryEscape(is.cfg.Introspection.ClientID), url.QueryEscape(v.secrets[is.cfg.Issuer]))
	var in introspection
	if err := doJSON(is.client, req, &in); err != nil {
		return nil, fmt.Errorf("%w: introspection at %s: %w", ErrIssuerDown, is.cfg.Issuer, err)
	}
	if !in.Active {
		return nil, fmt.Errorf("issuer %s: %w", is.cfg.Issuer, ErrInactive)
	}
	if in.Issuer != "" && in.Issuer != is.cfg.Issuer {
		return nil, fmt.Errorf("introspection iss %.200q at %s: %w", in.Issuer, is.cfg.Issuer, ErrUnknownIssuer)
	}
	// The audience is required here as for a JWT: an active token for
	// another resource is still not one for this one.
	if !slices.Contains(in.Audience, is.cfg.Audience) {
		return nil, fmt.Errorf("aud %.200q, want %s: %w", []string(in.Audience), is.cfg.Audience, ErrAudience)
	}
	now := v.now()
	if in.Expiry == nil {
		return nil, fmt.Errorf("introspection without exp: %w", ErrClaims)
	}
	if now.Add(-v.skew).After(in.Expiry.Time()) {
		return nil, ErrExpired
	}
	if in.NotBef != nil && now.Add(v.skew).Before(in.NotBef.Time()) {
		return nil, ErrNotYetValid
	}
	sub := in.Subject
	if err := checkSubject(sub); err != nil {
		return nil, fmt.Errorf("introspection: %w", err)
	}
	return &Token{Issuer: is.cfg.Issuer, Subject: sub, ClientID: in.ClientID, Scopes: strings.Fields(in.Scope), Expiry: in.Expiry.Time()}, nil
}

// introspectionCache remembers active answers for a short while, keyed by
// the token's SHA-256 (the token itself is not kept), so each request of a
// session does not cost a round trip. Refusals are not cached.
type introspectionCache struct {
	mu      sync.Mutex
	entries map[[32]byte]cached
}

type cached struct {
	t     *Token
	until time.Time
}

const (
	introspectionTTL     = time.Minute
	introspectionEntries = 4096
)

func newIntrospectionCache() *introspectionCache {
	return &introspectionCache{entries: map[[32]byte]cached{}}
}

func (c *introspectionCache) get(k [32]byte, now time.Time) (*Token, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[k]
	if !ok || !now.Before(e.until) {
		delete(c.entries, k)
		return nil, false
	}
	return e.t, true
}

func (c *introspectionCache) put(k [32]byte, t *Token, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= introspectionEntries {
		clear(c.entries) // bounded memory; the next requests re-introspect
	}
	until := now.Add(introspectionTTL)
	if t.Expiry.Before(until) {
		until = t.Expiry
	}
	c.entries[k] = cached{t: t, until: until}
}
