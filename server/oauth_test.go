package server

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/airlock-dev/airlock/internal/edge/oauth"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/testkit/testidp"
)

const oauthResource = "https://airlock.test/mcp"

var oauthClients = []testidp.Client{
	{ID: "agent", Secret: "agent-secret", Audience: []string{oauthResource}},
	{ID: "noaud", Secret: "noaud-secret"},
	{ID: "other", Secret: "other-secret", Audience: []string{"https://other.test/mcp"}},
	{ID: "expired", Secret: "expired-secret", Audience: []string{oauthResource}, Lifetime: -time.Hour},
}

// oauthServer is an edge server that accepts access tokens of a real
// provider on loopback beside the static test token: scope airlock.read
// maps to role lister.
func oauthServer(t *testing.T) (*fixture, string, *testidp.IdP) {
	t.Helper()
	idp := startIdP(t)
	f, url := edgeServer(t, `{oauth: {resource: "`+oauthResource+`", scopes_supported: [airlock.read],
      jwks_cache_seconds: 1, jwks_min_refresh_seconds: 1,
      issuers: [{issuer: "`+idp.Issuer+`"}],
      role_mapping: [{role: lister, scopes: [airlock.read]}]}}`)
	return f, url, idp
}

// startIdP runs the test OpenID Provider with oauthClients on loopback
// until the test ends.
func startIdP(t *testing.T) *testidp.IdP {
	t.Helper()
	return testidp.StartForTest(t, oauthClients)
}

func idpToken(t *testing.T, idp *testidp.IdP, client, scope string) string {
	t.Helper()
	for _, c := range oauthClients {
		if c.ID == client {
			tok, err := idp.Token(c.ID, c.Secret, scope)
			must(t, err)
			return tok
		}
	}
	t.Fatalf("no client %s", client)
	return ""
}

// postInit sends initialize with auth as the Authorization header ("" =
// none) and returns the status and the WWW-Authenticate header.
func postInit(t *testing.T, url, auth string) (int, string) {
	t.Helper()
	resp, _ := roundTrip(t, mcpRequest(t, http.MethodPost, url, strings.NewReader(initBody), auth))
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}

// TestOAuthTokensRefusedAndAudited is issue 13's list: each misdirected or
// malformed token gets a 401 whose challenge points at the protected
// resource metadata, and an audit record naming the check that failed;
// a valid token that maps to no role gets 403 insufficient_scope.
func TestOAuthTokensRefusedAndAudited(t *testing.T) {
	f, url, idp := oauthServer(t)
	valid := idpToken(t, idp, "agent", "airlock.read")
	// A token of the retired key: minted before a rotation.
	retired := valid
	_, err := idp.Rotate()
	must(t, err)
	time.Sleep(1100 * time.Millisecond) // past jwks_cache_seconds: the set is refetched
	otherIdP := startIdP(t)
	parts := strings.Split(idpToken(t, idp, "agent", "airlock.read"), ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) + "." + parts[1] + "."
	unknownKid := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"RS256","kid":"no-such-kid"}`)) + "." + parts[1] + "." + parts[2]

	metadata := `resource_metadata="https://airlock.test/.well-known/oauth-protected-resource/mcp"`
	cases := []struct {
		name, token string
		status      int
		challenge   string
		code        violation.Code
		audit       string // in the audit record's reason
	}{
		{"no token", "", 401, metadata, violation.Unauthenticated, "no bearer token"},
		{"wrong audience", idpToken(t, idp, "noaud", "airlock.read"), 401, `error="invalid_token"`, violation.Unauthenticated, oauth.ErrAudience.Error()},
		{"token for another resource", idpToken(t, idp, "other", "airlock.read"), 401, metadata, violation.Unauthenticated, oauth.ErrAudience.Error()},
		{"expired", idpToken(t, idp, "expired", "airlock.read"), 401, `error="invalid_token"`, violation.Unauthenticated, oauth.ErrExpired.Error()},
		{"wrong issuer", idpToken(t, otherIdP, "agent", "airlock.read"), 401, metadata, violation.Unauthenticated, oauth.ErrUnknownIssuer.Error()},
		{"alg none", none, 401, metadata, violation.Unauthenticated, oauth.ErrAlgorithm.Error()},
		{"unknown kid", unknownKid, 401, metadata, violation.Unauthenticated, oauth.ErrUnknownKey.Error()},
		{"rotated key", retired, 401, metadata, violation.Unauthenticated, oauth.ErrUnknownKey.Error()},
		{"valid token, no scope that maps to a role", idpToken(t, idp, "agent", ""), 403, `error="insufficient_scope", scope="airlock.read"`, violation.InsufficientScope, "maps to no role"},
	}
	var tokens []string
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			auth := ""
			if tc.token != "" {
				auth = "Bearer " + tc.token
				tokens = append(tokens, tc.token)
			}
			status, challenge := postInit(t, url, auth)
			if status != tc.status || !strings.Contains(challenge, tc.challenge) || !strings.Contains(challenge, metadata) {
				t.Fatalf("status %d, WWW-Authenticate %q; want %d with %s", status, challenge, tc.status, tc.challenge)
			}
			f.srv.refusals.Flush()
			found := false
			for _, r := range f.auditRecords(t) {
				if r.Violation == string(tc.code) && strings.Contains(r.Reason, tc.audit) {
					found = true
				}
			}
			if !found {
				t.Fatalf("no %s audit record with %q", tc.code, tc.audit)
			}
		})
	}
	// The 403's record names the principal and its client.
	var forbidden bool
	for _, r := range f.auditRecords(t) {
		if r.Violation == string(violation.InsufficientScope) {
			forbidden = r.Principal == idp.Issuer+"|agent" && strings.Contains(string(r.Extra), `"client_id":"agent"`)
		}
	}
	if !forbidden {
		t.Fatal("the insufficient_scope record does not name issuer|sub and client_id")
	}
	assertNoTokenInAudit(t, f, tokens)
}

func assertNoTokenInAudit(t *testing.T, f *fixture, tokens []string) {
	t.Helper()
	all, err := json.Marshal(f.auditRecords(t))
	must(t, err)
	for _, tok := range tokens {
		for _, part := range strings.Split(tok, ".") {
			if len(part) > 16 && strings.Contains(string(all), part) {
				t.Fatalf("the audit trail holds part of a token: %.20s…", part)
			}
		}
	}
}

// TestOAuthClientIsServed: a token from the provider opens a session and
// calls tools; the records name issuer|sub as principal and the client;
// the static token keeps working beside it.
func TestOAuthClientIsServed(t *testing.T) {
	f, url, idp := oauthServer(t)
	tok := idpToken(t, idp, "agent", "airlock.read")
	c := bearerClient(t, url, tok, transport.WithHTTPTimeout(10*time.Second))
	if res := call(t, c, "list_pools", nil); res.IsError || !strings.Contains(text(res), "alpha") {
		t.Fatalf("OAuth client not served: %s", text(res))
	}
	validClient(t, url) // the static token
	var opened, called bool
	for _, r := range f.auditRecords(t) {
		if r.Principal != idp.Issuer+"|agent" || r.Role != "lister" || !strings.Contains(string(r.Extra), `"client_id":"agent"`) {
			continue
		}
		opened = opened || r.Capability == "session.open"
		called = called || r.Tool == "list_pools"
	}
	if !opened || !called {
		t.Fatalf("records of the OAuth principal: session.open %v, list_pools %v", opened, called)
	}
	assertNoTokenInAudit(t, f, []string{tok})
}

// TestProtectedResourceMetadata: RFC 9728 metadata at the well-known path
// and its path-suffixed form, unauthenticated; nothing elsewhere.
func TestProtectedResourceMetadata(t *testing.T) {
	_, url, idp := oauthServer(t)
	want := `{"resource":"https://airlock.test/mcp","authorization_servers":["` + idp.Issuer + `"],"scopes_supported":["airlock.read"],"bearer_methods_supported":["header"],"resource_name":"airlock"}`
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := http.Get(url + path)
		must(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != want || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
	for _, path := range []string{"/.well-known/oauth-protected-resource/sse", "/.well-known/oauth-protected-resource/mcp/x"} {
		resp, err := http.Get(url + path)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Fatalf("%s: %d, want 404", path, resp.StatusCode)
		}
	}
}

// TestNoOAuthNoMetadata: without transports.http.oauth there is no
// metadata and the 401 challenge stays a plain Bearer one.
func TestNoOAuthNoMetadata(t *testing.T) {
	_, url := edgeServer(t, `{}`)
	resp, err := http.Get(url + "/.well-known/oauth-protected-resource")
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("metadata without oauth: %d", resp.StatusCode)
	}
	if status, challenge := postInit(t, url, "Bearer not-a-token"); status != 401 || challenge != `Bearer realm="airlock"` {
		t.Fatalf("%d %q", status, challenge)
	}
}
