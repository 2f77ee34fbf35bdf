package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/kit/yamlfile"
)

const oauthOK = `{resource: "https://airlock.example/mcp", scopes_supported: [airlock.read],
  issuers: [{issuer: "https://idp.example/realms/x"}],
  role_mapping: [{role: local, scopes: [airlock.read]}]}`

func oauthConfig(oauth string) string {
	return base + "transports:\n  http:\n    oauth: " + oauth + "\n"
}

// TestOAuthConfigRefused: settings that would weaken token checks are
// refused at load, with the line.
func TestOAuthConfigRefused(t *testing.T) {
	tests := []struct {
		name, oauth string
		want        error
	}{
		{"http resource off loopback", strings.Replace(oauthOK, "https://airlock.example", "http://airlock.example", 1), config.ErrInvalid},
		{"resource with a fragment", strings.Replace(oauthOK, "/mcp", "/mcp#x", 1), config.ErrInvalid},
		{"http issuer off loopback", strings.Replace(oauthOK, "https://idp", "http://idp", 1), config.ErrInvalid},
		{"alg none", strings.Replace(oauthOK, `realms/x"}`, `realms/x", algorithms: [none]}`, 1), config.ErrInvalid},
		{"HS256", strings.Replace(oauthOK, `realms/x"}`, `realms/x", algorithms: [HS256]}`, 1), config.ErrInvalid},
		{"no issuers", strings.Replace(oauthOK, `issuers: [{issuer: "https://idp.example/realms/x"}]`, `issuers: []`, 1), config.ErrInvalid},
		{"no role mapping", strings.Replace(oauthOK, `role_mapping: [{role: local, scopes: [airlock.read]}]`, `role_mapping: []`, 1), config.ErrInvalid},
		{"rule without condition", strings.Replace(oauthOK, `{role: local, scopes: [airlock.read]}`, `{role: local}`, 1), config.ErrInvalid},
		{"rule with unknown role", strings.Replace(oauthOK, `{role: local,`, `{role: ghost,`, 1), config.ErrUnknownReference},
		{"rule with unknown issuer", strings.Replace(oauthOK, `{role: local,`, `{role: local, issuer: "https://other.example",`, 1), config.ErrUnknownReference},
		{"rule bound to a non-id", strings.Replace(oauthOK, `{role: local,`, `{role: local, context: default,`, 1), config.ErrInvalid},
		{"scope with a quote", strings.Replace(oauthOK, `scopes_supported: [airlock.read]`, `scopes_supported: ['a"b']`, 1), config.ErrInvalid},
		{"skew over 300 s", strings.Replace(oauthOK, `{resource:`, `{clock_skew_seconds: 3600, resource:`, 1), config.ErrInvalid},
		{"introspection without secret", strings.Replace(oauthOK, `realms/x"}`, `realms/x", introspection: {client_id: airlock}}`, 1), config.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("airlock.yaml", []byte(oauthConfig(tc.oauth)), t.TempDir())
			var ye *yamlfile.Error
			if !errors.As(err, &ye) || ye.Line < 6 {
				t.Fatalf("err = %v, want a *yamlfile.Error at the oauth section", err)
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestOAuthDefaults(t *testing.T) {
	cfg, err := config.Parse("airlock.yaml", []byte(oauthConfig(oauthOK)), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.Transports.HTTP.OAuth
	is := o.Issuers[0]
	if is.Audience != o.Resource || strings.Join(is.Algorithms, ",") != "RS256,ES256" || is.GroupsClaim != "groups" ||
		o.AuthorizationServers[0] != is.Issuer || o.ClockSkewSeconds != 30 || o.JWKSCacheSeconds != 300 || o.JWKSMinRefreshSeconds != 10 || o.ResourceName != "airlock" {
		t.Fatalf("defaults: %+v", o)
	}
}
