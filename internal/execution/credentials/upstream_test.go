package credentials

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
)

// fakeExchanger grants "exchanged-token-<secret>" or fails with err.
type fakeExchanger struct {
	err    error
	secret string
}

func (f *fakeExchanger) Exchange(_ context.Context, _ config.Upstream, secret string) (string, error) {
	f.secret = secret
	if f.err != nil {
		return "", f.err
	}
	return "exchanged-token-0123", nil
}

// TestForUpstreamScoped (issue 23 item 3): a role's call to an upstream
// carries exactly the credentials of that role naming that upstream —
// headers rendered, variables as NAME=value — and the exchanged token as
// Authorization; every one of them is in the call's scrubber; an
// unreadable secret or a failed exchange fails the call.
func TestForUpstreamScoped(t *testing.T) {
	ex := &fakeExchanger{}
	env := map[string]string{"K": "header-secret-0123", "E": "env-secret-0123", "TE": "client-secret-0123"}
	creds := []config.Credential{
		{ID: "hdr", Secret: config.TokenSource{Env: "K"}, Roles: []string{"a"},
			Header: &config.CredentialHeader{Name: "X-Key", Value: "Key {secret}", Upstreams: []string{"web"}}},
		{ID: "var", Secret: config.TokenSource{Env: "E"}, Roles: []string{"a", "b"},
			Env: &config.CredentialEnv{Name: "TOKEN", Upstreams: []string{"tool"}}},
	}
	s := New(creds, &Options{Getenv: func(k string) string { return env[k] }, Exchanger: ex})
	web := config.Upstream{ID: "web", URL: "https://web.example/mcp"}
	tool := config.Upstream{ID: "tool", Command: []string{"/bin/true"}}
	obo := config.Upstream{ID: "obo", URL: "https://obo.example/mcp", TokenExchange: &config.TokenExchange{ClientSecret: config.TokenSource{Env: "TE"}}}
	for _, tc := range []struct {
		name    string
		role    string
		up      config.Upstream
		headers map[string]string
		env     []string
	}{
		{"role a to web", "a", web, map[string]string{"X-Key": "Key header-secret-0123"}, nil},
		{"role b to web: none", "b", web, map[string]string{}, nil},
		{"role b to tool", "b", tool, map[string]string{}, []string{"TOKEN=env-secret-0123"}},
		{"role c to tool: none", "c", tool, map[string]string{}, nil},
		{"token exchange", "c", obo, map[string]string{"Authorization": "Bearer exchanged-token-0123"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.ForUpstream(context.Background(), tc.role, tc.up)
			if err != nil || len(got.Headers) != len(tc.headers) || !slices.Equal(got.Env, tc.env) {
				t.Fatalf("ForUpstream = %+v, %v", got, err)
			}
			for k, v := range tc.headers {
				if got.Headers[k] != v || got.Scrubber.String(v) == v {
					t.Errorf("header %s = %q (scrubbed %q)", k, got.Headers[k], got.Scrubber.String(v))
				}
			}
			for _, e := range tc.env {
				if got.Scrubber.String(e) == e {
					t.Errorf("%s not scrubbed", e)
				}
			}
		})
	}
	if ex.secret != "client-secret-0123" {
		t.Errorf("the exchanger got client secret %q", ex.secret)
	}
	env["K"] = ""
	if _, err := s.ForUpstream(context.Background(), "a", web); !errors.Is(err, ErrRevoked) {
		t.Errorf("revoked header credential: %v", err)
	}
	refused := errors.New("refused")
	ex.err = refused
	if _, err := s.ForUpstream(context.Background(), "a", obo); !errors.Is(err, refused) {
		t.Errorf("failed exchange: %v", err)
	}
	env["TE"] = ""
	if _, err := s.ForUpstream(context.Background(), "a", obo); !errors.Is(err, ErrRevoked) {
		t.Errorf("revoked client secret: %v", err)
	}
}
