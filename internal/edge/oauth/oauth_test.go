package oauth

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/testkit/testidp"
)

const resource = "https://airlock.test/mcp"

var testClients = []testidp.Client{
	{ID: "agent", Secret: "agent-secret", Audience: []string{resource}, Groups: []string{"analysts"}},
	{ID: "noaud", Secret: "noaud-secret"}, // zitadel's default: aud = the client id
	{ID: "other", Secret: "other-secret", Audience: []string{"https://other.test/mcp"}},
	{ID: "expired", Secret: "expired-secret", Audience: []string{resource}, Lifetime: -time.Hour},
	{ID: "opaque", Secret: "opaque-secret", Audience: []string{resource}, Opaque: true},
	{ID: "opaque-other", Secret: "opaque-other-secret", Audience: []string{"https://other.test/mcp"}, Opaque: true},
	{ID: "airlock", Secret: "airlock-secret"}, // the resource server, for introspection
}

// startIdP runs a real OpenID Provider on loopback for the test.
func startIdP(t testing.TB) *testidp.IdP {
	t.Helper()
	return testidp.StartForTest(t, testClients)
}

// clock is a settable clock near real time (the provider stamps real times).
type clock struct {
	mu sync.Mutex
	d  time.Duration
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return time.Now().Add(c.d) }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.d += d
}

// countingTransport counts requests per path.
type countingTransport struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n[r.URL.Path]++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *countingTransport) count(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[path]
}

type fixture struct {
	idp   *testidp.IdP
	v     *Validator
	clock *clock
	http  *countingTransport
}

func oauthConfig(issuer string) config.OAuth {
	return config.OAuth{
		Resource: resource, ScopesSupported: []string{"airlock.read"},
		Issuers: []config.OAuthIssuer{{Issuer: issuer, Audience: resource, Algorithms: []string{"RS256", "ES256"}, GroupsClaim: "groups",
			Introspection: &config.OAuthIntrospection{ClientID: "airlock", ClientSecret: config.TokenSource{Env: "X"}}}},
		RoleMapping: []config.RoleMapping{
			{Role: "reader", Scopes: []string{"airlock.read"}},
			{Role: "analyst", Groups: []string{"analysts"}, ClientIDs: []string{"agent"}},
		},
		ClockSkewSeconds: 30, JWKSCacheSeconds: 300, JWKSMinRefreshSeconds: 10,
	}
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{idp: startIdP(t), clock: &clock{}, http: &countingTransport{n: map[string]int{}}}
	v, err := New(oauthConfig(f.idp.Issuer), func(config.TokenSource) (string, error) { return "airlock-secret", nil },
		&Options{Client: &http.Client{Transport: f.http, Timeout: 10 * time.Second}, Now: f.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	f.v = v
	return f
}

func (f *fixture) token(t testing.TB, client, scope string) string {
	t.Helper()
	for _, c := range testClients {
		if c.ID == client {
			tok, err := f.idp.Token(c.ID, c.Secret, scope)
			if err != nil {
				t.Fatal(err)
			}
			return tok
		}
	}
	t.Fatalf("no client %s", client)
	return ""
}

// sign makes a JWT with claims, signed by key with header kid — for
// tokens a real provider would not issue.
func sign(t testing.TB, alg jose.SignatureAlgorithm, key any, kid string, claims map[string]any) string {
	t.Helper()
	opts := (&jose.SignerOptions{}).WithType("at+jwt")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (f *fixture) claims(mod func(map[string]any)) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": f.idp.Issuer, "sub": "agent", "aud": resource, "client_id": "agent",
		"scope": "airlock.read", "iat": now.Unix(), "nbf": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()}
	if mod != nil {
		mod(c)
	}
	return c
}

// algNone rewrites a real token's header to alg none and drops the
// signature: the classic bypass of verifiers that trust the header.
func algNone(tok string) string {
	parts := strings.Split(tok, ".")
	head := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`))
	return head + "." + parts[1] + "."
}

// TestValidateAgainstProvider: tokens from a real provider, and tokens
// crafted with its key or others, each accepted or refused for the right
// reason.
func TestValidateAgainstProvider(t *testing.T) {
	f := newFixture(t)
	other := startIdP(t) // a real provider Airlock is not configured to trust
	kid, key := f.idp.SigningKey()
	stranger, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	otherTok, err := other.Token("agent", "agent-secret", "airlock.read")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		tok  string
		want error
	}{
		{"valid JWT from the provider", f.token(t, "agent", "airlock.read"), nil},
		{"wrong audience (the client id)", f.token(t, "noaud", "airlock.read"), ErrAudience},
		{"token for another resource", f.token(t, "other", "airlock.read"), ErrAudience},
		{"expired", f.token(t, "expired", "airlock.read"), ErrExpired},
		{"wrong issuer (another real provider)", otherTok, ErrUnknownIssuer},
		{"alg none", algNone(f.token(t, "agent", "airlock.read")), ErrAlgorithm},
		{"HS256 keyed with the public key", sign(t, jose.HS256, pubPEM, kid, f.claims(nil)), ErrAlgorithm},
		{"unknown kid", sign(t, jose.RS256, stranger, "no-such-kid", f.claims(nil)), ErrUnknownKey},
		{"known kid, another key", sign(t, jose.RS256, stranger, kid, f.claims(nil)), ErrSignature},
		{"not valid yet", sign(t, jose.RS256, key, kid, f.claims(func(c map[string]any) { c["nbf"] = time.Now().Add(time.Hour).Unix() })), ErrNotYetValid},
		{"expired beyond the skew", sign(t, jose.RS256, key, kid, f.claims(func(c map[string]any) { c["exp"] = time.Now().Add(-31 * time.Second).Unix() })), ErrExpired},
		{"expired within the skew", sign(t, jose.RS256, key, kid, f.claims(func(c map[string]any) { c["exp"] = time.Now().Add(-10 * time.Second).Unix() })), nil},
		{"no exp", sign(t, jose.RS256, key, kid, f.claims(func(c map[string]any) { delete(c, "exp") })), ErrClaims},
		{"no sub", sign(t, jose.RS256, key, kid, f.claims(func(c map[string]any) { delete(c, "sub") })), ErrClaims},
		// The principal (issuer|sub) reaches the operator's terminal and
		// every record: a sub outside 1-255 printable ASCII is refused.
		{"sub with a newline", sign(t, jose.RS256, key, kid, f.claims(func(c map[string]any) { c["sub"] = "eve\n| forged | line |" })), ErrClaims},
		{"sub with an escape sequence", sign(t, jose.RS256, key, kid, f.claims(func(c map[string]any) { c["sub"] = "eve\x1b[2J" })), ErrClaims},
		{"sub with a bidi override", sign(t, jose.RS256, key, kid, f.claims(func(c map[string]any) { c["sub"] = "eve\u202egnp" })), ErrClaims},
		{"sub of 256 bytes", sign(t, jose.RS256, key, kid, f.claims(func(c map[string]any) { c["sub"] = strings.Repeat("s", 256) })), ErrClaims},
		{"sub of 255 printable bytes", sign(t, jose.RS256, key, kid, f.claims(func(c map[string]any) { c["sub"] = strings.Repeat("s|", 127) + "s" })), nil},
		{"iss of another issuer, signed by ours", sign(t, jose.RS256, key, kid, f.claims(func(c map[string]any) { c["iss"] = "https://evil.test" })), ErrUnknownIssuer},
		{"not a JWT, introspection says inactive", "opaque-garbage-token", ErrInactive},
		{"opaque token for this resource", f.token(t, "opaque", "airlock.read"), nil},
		{"opaque token for another resource", f.token(t, "opaque-other", "airlock.read"), ErrAudience},
		{"oversized", strings.Repeat("a", MaxTokenBytes+1), ErrMalformed},
		{"garbage JWT", "a.b.c", ErrMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.v.Validate(context.Background(), tc.tok)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if got.Issuer != f.idp.Issuer || got.Subject == "" || got.Principal() != got.Issuer+"|"+got.Subject {
					t.Fatalf("token %+v", got)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), tc.tok) && len(tc.tok) > 8 {
				t.Fatal("the error repeats the token")
			}
		})
	}
}

// TestValidTokenClaims: a provider's token yields its issuer, subject,
// client and scopes, and maps to a role.
func TestValidTokenClaims(t *testing.T) {
	f := newFixture(t)
	tok, err := f.v.Validate(context.Background(), f.token(t, "agent", "airlock.read"))
	if err != nil {
		t.Fatal(err)
	}
	if tok.Subject != "agent" || tok.ClientID != "agent" || len(tok.Scopes) != 1 || tok.Scopes[0] != "airlock.read" || tok.Groups[0] != "analysts" {
		t.Fatalf("token %+v", tok)
	}
	if rm, ok := f.v.Rule(tok); !ok || rm.Role != "reader" {
		t.Fatalf("role %q %v", rm.Role, ok)
	}
}

// TestKeyRotation: after the provider rotates its key, a token signed with
// the new key is accepted (the unknown kid triggers one refetch) and one
// signed with the retired key is refused once the set was refetched.
func TestKeyRotation(t *testing.T) {
	f := newFixture(t)
	old := f.token(t, "agent", "airlock.read")
	if _, err := f.v.Validate(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	if _, err := f.idp.Rotate(); err != nil {
		t.Fatal(err)
	}
	f.clock.advance(11 * time.Second) // past jwks_min_refresh_seconds
	fresh := f.token(t, "agent", "airlock.read")
	if _, err := f.v.Validate(context.Background(), fresh); err != nil {
		t.Fatalf("token of the new key refused: %v", err)
	}
	f.clock.advance(11 * time.Second)
	if _, err := f.v.Validate(context.Background(), old); !errors.Is(err, ErrUnknownKey) {
		t.Fatalf("token of the retired key: err = %v, want ErrUnknownKey", err)
	}
}

// TestUnknownKidsAreRateLimited: a flood of tokens with invented kids
// costs the authorization server at most one key set fetch per interval.
func TestUnknownKidsAreRateLimited(t *testing.T) {
	f := newFixture(t)
	if _, err := f.v.Validate(context.Background(), f.token(t, "agent", "airlock.read")); err != nil {
		t.Fatal(err)
	}
	before := f.http.count("/keys")
	if before == 0 {
		t.Fatal("no key set fetch counted: the provider's jwks path changed?")
	}
	stranger, _ := rsa.GenerateKey(rand.Reader, 2048)
	var refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tok := sign(t, jose.RS256, stranger, "kid-"+string(rune('a'+i%26)), f.claims(nil))
			if _, err := f.v.Validate(context.Background(), tok); errors.Is(err, ErrUnknownKey) {
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	if refused.Load() != 50 {
		t.Fatalf("%d of 50 refused as unknown kid", refused.Load())
	}
	if n := f.http.count("/keys") - before; n > 1 {
		t.Fatalf("%d key set fetches for 50 unknown kids within the interval, want at most 1", n)
	}
}

// TestDiscoveryRefusesMixUp: metadata that names another issuer is not
// used, so its keys never verify tokens for the configured one.
func TestDiscoveryRefusesMixUp(t *testing.T) {
	f := newFixture(t)
	// The same provider under another name: its metadata says 127.0.0.1.
	alias := strings.Replace(f.idp.Issuer, "127.0.0.1", "localhost", 1)
	v, err := New(oauthConfig(alias), func(config.TokenSource) (string, error) { return "x", nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	kid, key := f.idp.SigningKey()
	tok := sign(t, jose.RS256, key, kid, f.claims(func(c map[string]any) { c["iss"] = alias }))
	_, err = v.Validate(context.Background(), tok)
	if !errors.Is(err, ErrIssuerDown) || !errors.Is(err, ErrMetadataIssuer) {
		t.Fatalf("err = %v, want ErrIssuerDown wrapping ErrMetadataIssuer", err)
	}
}

// TestIssuerDownFailsClosed: no key set, no acceptance.
func TestIssuerDownFailsClosed(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String()
	ln.Close()
	v, err := New(oauthConfig(dead), func(config.TokenSource) (string, error) { return "x", nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	stranger, _ := rsa.GenerateKey(rand.Reader, 2048)
	tok := sign(t, jose.RS256, stranger, "k", map[string]any{"iss": dead, "sub": "s", "aud": resource, "exp": time.Now().Add(time.Minute).Unix()})
	if _, err := v.Validate(context.Background(), tok); !errors.Is(err, ErrIssuerDown) {
		t.Fatalf("err = %v, want ErrIssuerDown", err)
	}
}

func TestRoleMapping(t *testing.T) {
	v := &Validator{cfg: config.OAuth{ScopesSupported: []string{"airlock.read"}, RoleMapping: []config.RoleMapping{
		{Role: "admin", Issuer: "https://a", Subjects: []string{"alice"}},
		{Role: "writer", Scopes: []string{"airlock.read", "airlock.write"}},
		{Role: "reader", Scopes: []string{"airlock.read"}, ClientIDs: []string{"app"}},
		{Role: "analyst", Groups: []string{"analysts"}},
	}}}
	cases := []struct {
		name  string
		tok   Token
		role  string
		scope string
	}{
		{"subject of the issuer", Token{Issuer: "https://a", Subject: "alice"}, "admin", ""},
		{"same subject, other issuer", Token{Issuer: "https://b", Subject: "alice"}, "", "airlock.read airlock.write"},
		{"all scopes", Token{Issuer: "https://b", Subject: "x", Scopes: []string{"airlock.write", "airlock.read"}}, "writer", ""},
		{"one scope, right client", Token{Issuer: "https://b", Subject: "x", ClientID: "app", Scopes: []string{"airlock.read"}}, "reader", ""},
		{"one scope, other client", Token{Issuer: "https://b", Subject: "x", ClientID: "evil", Scopes: []string{"airlock.read"}}, "", "airlock.read airlock.write"},
		{"group", Token{Issuer: "https://b", Subject: "x", Groups: []string{"staff", "analysts"}}, "analyst", ""},
		{"nothing", Token{Issuer: "https://b", Subject: "x"}, "", "airlock.read airlock.write"},
		{"empty client id never matches", Token{Issuer: "https://b", Subject: "x", Scopes: []string{"airlock.read"}}, "", "airlock.read airlock.write"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rm, ok := v.Rule(&tc.tok)
			role := rm.Role
			if role != tc.role || ok != (tc.role != "") {
				t.Fatalf("role %q %v, want %q", role, ok, tc.role)
			}
			if !ok {
				if got := v.NeededScope(&tc.tok); got != tc.scope {
					t.Fatalf("needed scope %q, want %q", got, tc.scope)
				}
			}
		})
	}
}

func TestMetadata(t *testing.T) {
	cfg := &config.OAuth{Resource: "https://airlock.example/mcp", AuthorizationServers: []string{"https://idp.example/realms/x"},
		ScopesSupported: []string{"airlock.read"}, ResourceName: "airlock"}
	got, _ := json.Marshal(NewMetadata(cfg))
	want := `{"resource":"https://airlock.example/mcp","authorization_servers":["https://idp.example/realms/x"],"scopes_supported":["airlock.read"],"bearer_methods_supported":["header"],"resource_name":"airlock"}`
	if string(got) != want {
		t.Fatalf("metadata\n got %s\nwant %s", got, want)
	}
	if u := MetadataURL(cfg.Resource); u != "https://airlock.example/.well-known/oauth-protected-resource/mcp" {
		t.Fatal(u)
	}
	if u := MetadataURL("https://airlock.example/"); u != "https://airlock.example/.well-known/oauth-protected-resource" {
		t.Fatal(u)
	}
	if c := Challenge(cfg, true); c != `Bearer resource_metadata="https://airlock.example/.well-known/oauth-protected-resource/mcp", scope="airlock.read", error="invalid_token"` {
		t.Fatal(c)
	}
	if c := InsufficientScope(cfg, "airlock.read"); c != `Bearer error="insufficient_scope", scope="airlock.read", resource_metadata="https://airlock.example/.well-known/oauth-protected-resource/mcp"` {
		t.Fatal(c)
	}
}

func TestDiscoveryURLs(t *testing.T) {
	got := discoveryURLs("https://idp.example/realms/x")
	want := []string{"https://idp.example/.well-known/oauth-authorization-server/realms/x",
		"https://idp.example/.well-known/openid-configuration/realms/x",
		"https://idp.example/realms/x/.well-known/openid-configuration"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%v", got)
	}
}
