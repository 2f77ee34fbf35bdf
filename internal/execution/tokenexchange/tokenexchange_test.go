package tokenexchange_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/tokenexchange"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/testkit/testidp"
)

const (
	resource    = "https://airlock.test/mcp"
	upAudience  = "https://upstream.test/mcp"
	airlockID   = "airlock"
	airlockPass = "airlock-exchange-secret"
)

var clients = []testidp.Client{
	{ID: "agent", Secret: "agent-secret", Audience: []string{resource}},
	{ID: "agent2", Secret: "agent2-secret", Audience: []string{resource}},
	{ID: "expired", Secret: "expired-secret", Audience: []string{resource}, Lifetime: -time.Hour},
	{ID: airlockID, Secret: airlockPass, Exchange: []string{upAudience}},
	{ID: "stranger", Secret: "stranger-secret"}, // may not exchange
}

func startIdP(t *testing.T) *testidp.IdP {
	t.Helper()
	return testidp.StartForTest(t, clients)
}

// tokenEndpoint reads the provider's discovery document.
func tokenEndpoint(t *testing.T, idp *testidp.IdP) string {
	t.Helper()
	resp, err := http.Get(idp.Issuer + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var meta struct {
		TokenEndpoint string   `json:"token_endpoint"`
		Grants        []string `json:"grant_types_supported"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&meta); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(meta.Grants, "urn:ietf:params:oauth:grant-type:token-exchange") {
		t.Fatalf("the provider does not offer token exchange: %v", meta.Grants)
	}
	return meta.TokenEndpoint
}

func caller(t *testing.T, idp *testidp.IdP, client string) tokenexchange.Caller {
	t.Helper()
	i := slices.IndexFunc(clients, func(c testidp.Client) bool { return c.ID == client })
	tok, err := idp.Token(client, clients[i].Secret, "airlock.read")
	if err != nil {
		t.Fatal(err)
	}
	return tokenexchange.Caller{Token: tok, Principal: idp.Issuer + "|" + client, ClientID: client, Scopes: []string{"airlock.read"}, Expiry: time.Now().Add(4 * time.Minute)}
}

func upstreamWith(endpoint, client, audience string) config.Upstream {
	return config.Upstream{ID: "up", URL: "https://upstream.test/mcp",
		TokenExchange: &config.TokenExchange{TokenEndpoint: endpoint, ClientID: client, Audience: audience, Scope: "mcp.use"}}
}

// claims decodes a JWT's payload (the test checks what the upstream
// would be handed, not the signature the provider made).
func claims(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %.20s…", tok)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// clock is a settable clock for the cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// TestExchangeWithRealProvider (issue 23 item 3): against zitadel's
// provider (testidp), the exchange yields a token for the upstream's
// audience on the caller's behalf — not the caller's token — which is
// cached: the second call asks the provider nothing, another subject or
// an expired entry asks again.
func TestExchangeWithRealProvider(t *testing.T) {
	idp := startIdP(t)
	up := upstreamWith(tokenEndpoint(t, idp), airlockID, upAudience)
	clk := &clock{t: time.Now()}
	ex := tokenexchange.New(&tokenexchange.Options{Now: clk.now})
	agent := caller(t, idp, "agent")
	ctx := tokenexchange.WithCaller(context.Background(), agent)

	tok, err := ex.Exchange(ctx, up, airlockPass)
	if err != nil {
		t.Fatal(err)
	}
	c := claims(t, tok)
	aud, _ := c["aud"].([]any)
	act, _ := c["act"].(map[string]any)
	if tok == agent.Token || len(aud) != 1 || aud[0] != upAudience || c["sub"] != "agent" || act["sub"] != airlockID || c["client_id"] != airlockID {
		t.Fatalf("exchanged token: %v", c)
	}
	if fmt.Sprint(claims(t, agent.Token)["aud"]) == fmt.Sprint(c["aud"]) {
		t.Fatal("the exchanged token has the caller's audience")
	}
	if n := idp.Exchanges(); n != 1 {
		t.Fatalf("%d exchanges, want 1", n)
	}
	// Cache hit: the same token, nothing asked.
	if again, err := ex.Exchange(ctx, up, airlockPass); err != nil || again != tok || idp.Exchanges() != 1 {
		t.Fatalf("second call: %v, same token %v, %d exchanges", err, again == tok, idp.Exchanges())
	}
	// Another subject: its own exchange, its own token.
	other, err := ex.Exchange(tokenexchange.WithCaller(context.Background(), caller(t, idp, "agent2")), up, airlockPass)
	if err != nil || other == tok || claims(t, other)["sub"] != "agent2" || idp.Exchanges() != 2 {
		t.Fatalf("another subject: %v, %d exchanges", err, idp.Exchanges())
	}
	// Past the exchanged token's life (less the early renewal): asked again.
	clk.add(5 * time.Minute)
	if _, err := ex.Exchange(tokenexchange.WithCaller(context.Background(), tokenexchange.Caller{Token: agent.Token, Principal: agent.Principal,
		ClientID: agent.ClientID, Scopes: agent.Scopes}), up, airlockPass); err != nil || idp.Exchanges() != 3 {
		t.Fatalf("after expiry: %v, %d exchanges", err, idp.Exchanges())
	}
}

// TestExchangeFailsClosed: every way an exchange cannot be had is
// UPSTREAM_TOKEN_EXCHANGE_REFUSED with its sentinel, and no error's text
// holds the caller's token or the client secret.
func TestExchangeFailsClosed(t *testing.T) {
	idp := startIdP(t)
	endpoint := tokenEndpoint(t, idp)
	agent := caller(t, idp, "agent")
	expiredTok, err := idp.Token("expired", "expired-secret", "airlock.read")
	if err != nil {
		t.Fatal(err)
	}
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		subject := r.PostForm.Get("subject_token")
		if r.URL.Path == "/leak" {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"invalid_grant","error_description":"bad token %s, secret %s"}`, subject, airlockPass)
			return
		}
		// A "provider" that hands the caller's token back.
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","expires_in":300}`, subject)
	}))
	defer echo.Close()
	at := func(c tokenexchange.Caller) context.Context { return tokenexchange.WithCaller(context.Background(), c) }
	expiredCaller := agent
	expiredCaller.Expiry = time.Now().Add(-time.Second)
	for _, tc := range []struct {
		name   string
		ctx    context.Context
		up     config.Upstream
		secret string
		want   error
		asked  bool // the provider's storage judged the request (a subject token it cannot verify is refused before)
	}{
		{"no caller token", context.Background(), upstreamWith(endpoint, airlockID, upAudience), airlockPass, tokenexchange.ErrNoCaller, false},
		{"caller token expired, known", at(expiredCaller), upstreamWith(endpoint, airlockID, upAudience), airlockPass, tokenexchange.ErrCallerExpired, false},
		{"caller token expired, judged by the provider", at(tokenexchange.Caller{Token: expiredTok, Principal: "x|expired"}), upstreamWith(endpoint, airlockID, upAudience), airlockPass, tokenexchange.ErrRefused, false},
		{"audience refused", at(agent), upstreamWith(endpoint, airlockID, "https://elsewhere.test"), airlockPass, tokenexchange.ErrRefused, true},
		{"client may not exchange", at(agent), upstreamWith(endpoint, "stranger", upAudience), "stranger-secret", tokenexchange.ErrRefused, true},
		{"wrong client secret", at(agent), upstreamWith(endpoint, airlockID, upAudience), "not-the-secret", tokenexchange.ErrRefused, false},
		{"forged token", at(tokenexchange.Caller{Token: "a.b.c", Principal: "x|y"}), upstreamWith(endpoint, airlockID, upAudience), airlockPass, tokenexchange.ErrRefused, false},
		{"provider hands the caller's token back", at(agent), upstreamWith(echo.URL+"/echo", airlockID, upAudience), airlockPass, tokenexchange.ErrAnswer, false},
		{"provider echoes secrets in its error", at(agent), upstreamWith(echo.URL+"/leak", airlockID, upAudience), airlockPass, tokenexchange.ErrRefused, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := idp.Exchanges()
			_, err := tokenexchange.New(nil).Exchange(tc.ctx, tc.up, tc.secret)
			var v *violation.Error
			if !errors.As(err, &v) || v.Code != violation.UpstreamTokenExchange || !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %s wrapping %v", err, violation.UpstreamTokenExchange, tc.want)
			}
			if asked := idp.Exchanges() > before; asked != tc.asked {
				t.Errorf("provider asked: %v, want %v", asked, tc.asked)
			}
			for _, s := range []string{agent.Token, expiredTok, airlockPass} {
				if strings.Contains(err.Error(), s) || strings.Contains(v.Public(), s) {
					t.Errorf("the error holds a secret (%.12s…): %v", s, err)
				}
			}
		})
	}
}

// TestCacheBounded: the cache holds at most MaxEntries tokens.
func TestCacheBounded(t *testing.T) {
	idp := startIdP(t)
	up := upstreamWith(tokenEndpoint(t, idp), airlockID, upAudience)
	ex := tokenexchange.New(&tokenexchange.Options{MaxEntries: 2})
	for _, scope := range []string{"a", "b", "c"} {
		c := caller(t, idp, "agent")
		c.Scopes = []string{scope} // another subject as the cache keys it
		if _, err := ex.Exchange(tokenexchange.WithCaller(context.Background(), c), up, airlockPass); err != nil {
			t.Fatal(err)
		}
	}
	if n := ex.Len(); n != 2 {
		t.Fatalf("cache holds %d, want 2", n)
	}
}
