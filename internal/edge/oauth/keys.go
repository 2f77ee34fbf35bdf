package oauth

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/airlock-dev/airlock/internal/config"
)

// issuer is one trusted authorization server: its configuration, its
// discovered endpoints and its cached key set.
type issuer struct {
	cfg    config.OAuthIssuer
	algs   []jose.SignatureAlgorithm
	client *http.Client
	now    func() time.Time
	ttl    time.Duration // how long a fetched key set is trusted
	every  time.Duration // least time between two fetches

	mu        sync.Mutex
	meta      *serverMetadata // nil until discovered (or not needed)
	keys      []jose.JSONWebKey
	fetched   time.Time // last successful key set fetch
	lastFetch time.Time // last attempt, successful or not
	lastErr   error
	// lastDiscoveryFailure rate-limits discovery after a failure, as
	// lastFetch does key set fetches.
	lastDiscoveryFailure time.Time
}

// keysFor returns the issuer's keys that may verify a token with this kid
// and alg. The set is refetched when it is older than ttl or does not know
// kid — at most once per every, whatever tokens arrive.
func (is *issuer) keysFor(ctx context.Context, kid string, alg jose.SignatureAlgorithm) ([]jose.JSONWebKey, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	now := is.now()
	match := matching(is.keys, kid, alg)
	stale := is.fetched.IsZero() || now.Sub(is.fetched) >= is.ttl
	if (stale || len(match) == 0) && (is.lastFetch.IsZero() || now.Sub(is.lastFetch) >= is.every) {
		is.lastFetch = now
		if err := is.refresh(ctx); err != nil {
			is.lastErr = err
		} else {
			is.lastErr = nil
			is.fetched = now
			match = matching(is.keys, kid, alg)
		}
	}
	if len(match) > 0 {
		return match, nil
	}
	if is.keys == nil && is.lastErr != nil {
		return nil, fmt.Errorf("%w: %w", ErrIssuerDown, is.lastErr)
	}
	return nil, fmt.Errorf("kid %.64q: %w", kid, ErrUnknownKey)
}

// refresh fetches the key set (discovering where it is first, unless
// configured). Called with mu held.
func (is *issuer) refresh(ctx context.Context) error {
	uri := is.cfg.JWKSURI
	if uri == "" {
		if err := is.discoverLocked(ctx); err != nil {
			return err
		}
		uri = is.meta.JWKSURI
		if uri == "" {
			return fmt.Errorf("%s publishes no jwks_uri", is.cfg.Issuer)
		}
	}
	var set jose.JSONWebKeySet
	if err := getJSON(ctx, is.client, uri, &set); err != nil {
		return fmt.Errorf("fetching keys: %w", err)
	}
	keys := make([]jose.JSONWebKey, 0, len(set.Keys))
	for _, k := range set.Keys {
		// Only public signing keys: a symmetric key in a published set
		// would be an HMAC secret anyone could read.
		if k.Valid() && k.IsPublic() && k.Use != "enc" {
			keys = append(keys, k)
		}
	}
	is.keys = keys
	return nil
}

func (is *issuer) discoverLocked(ctx context.Context) error {
	if is.meta != nil {
		return nil
	}
	now := is.now()
	if !is.lastDiscoveryFailure.IsZero() && now.Sub(is.lastDiscoveryFailure) < is.every {
		return fmt.Errorf("discovery of %s failed less than %s ago", is.cfg.Issuer, is.every)
	}
	m, err := discover(ctx, is.client, is.cfg.Issuer)
	if err != nil {
		is.lastDiscoveryFailure = now
		return err
	}
	is.meta = m
	return nil
}

// introspectionEndpoint is the configured endpoint, or the discovered one.
func (is *issuer) introspectionEndpoint(ctx context.Context) (string, error) {
	if is.cfg.Introspection.Endpoint != "" {
		return is.cfg.Introspection.Endpoint, nil
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	if err := is.discoverLocked(ctx); err != nil {
		return "", fmt.Errorf("%w: %w", ErrIssuerDown, err)
	}
	if is.meta.IntrospectionEndpoint == "" {
		return "", fmt.Errorf("%w: %s publishes no introspection_endpoint", ErrIssuerDown, is.cfg.Issuer)
	}
	return is.meta.IntrospectionEndpoint, nil
}

// matching picks the keys that may verify a token: the same kid (any,
// when the token names none), and an alg, if the key states one, equal to
// the token's.
func matching(keys []jose.JSONWebKey, kid string, alg jose.SignatureAlgorithm) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range keys {
		if kid != "" && k.KeyID != kid {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != string(alg) {
			continue
		}
		out = append(out, k)
	}
	return out
}
