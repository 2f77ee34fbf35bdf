package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/airlock-dev/airlock/internal/config"
)

// FuzzValidate: any bearer token. Validate never panics; a refusal always
// wraps one of the package's sentinels; an acceptance carries the
// configured issuer, a subject and an expiry. The key set is preloaded, so
// the fuzzer runs without a network.
func FuzzValidate(f *testing.F) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	const iss = "https://idp.fuzz"
	cfg := config.OAuth{Resource: resource, ClockSkewSeconds: 30, JWKSCacheSeconds: 3600, JWKSMinRefreshSeconds: 3600,
		Issuers:     []config.OAuthIssuer{{Issuer: iss, Audience: resource, Algorithms: []string{"ES256", "RS256"}, GroupsClaim: "realm_access.roles", JWKSURI: "https://127.0.0.1:1/keys"}},
		RoleMapping: []config.RoleMapping{{Role: "r", Scopes: []string{"a"}}}}
	v, err := New(cfg, nil, &Options{})
	if err != nil {
		f.Fatal(err)
	}
	is := v.issuers[0]
	is.keys = []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}
	is.fetched, is.lastFetch = time.Now(), time.Now()
	now := time.Now()
	good := sign(f, jose.ES256, key, "k1", map[string]any{"iss": iss, "sub": "s", "aud": resource, "exp": now.Add(time.Hour).Unix(),
		"scope": "a b", "realm_access": map[string]any{"roles": []string{"x"}}})
	f.Add(good)
	f.Add(sign(f, jose.ES256, key, "", map[string]any{"iss": iss, "sub": "s", "aud": []string{"x", resource}, "exp": now.Add(time.Hour).Unix(), "scp": []string{"a"}}))
	f.Add(algNone(good))
	f.Add("a.b.c")
	f.Add("eyJhbGciOiJIUzI1NiJ9.e30.")
	f.Add("opaque")
	f.Add("")
	f.Fuzz(func(t *testing.T, raw string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		tok, err := v.Validate(ctx, raw)
		if err != nil {
			if Kind(err) == "token refused" && !errors.Is(err, ErrMetadataIssuer) {
				t.Fatalf("refusal without a sentinel: %v", err)
			}
			return
		}
		if tok.Issuer != iss || tok.Subject == "" || tok.Expiry.IsZero() {
			t.Fatalf("accepted %+v", tok)
		}
	})
}
