package tokenexchange_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/execution/tokenexchange"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// The caller's token and the client secret the fuzzed provider must never
// get into an error: random-looking, so no fixed message holds them by
// chance, and under 64 bytes, as opaque access tokens often are.
const (
	fuzzSubject = "sUbJ7Qx9ZkL2pW4tR8vYc3Nd5Hf6Gj1Km0Bq"
	fuzzSecret  = "cLiEnTsEcReT-M3nB6vC1xZ8qW5eR"
)

// answerTransport answers every request with one fixed status and body,
// counting the requests: the provider, without a socket.
type answerTransport struct {
	status int
	body   []byte
	asked  int
}

func (a *answerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	a.asked++
	return &http.Response{StatusCode: a.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(a.body)), Request: req}, nil
}

// FuzzExchangeAnswer: whatever status and body a token endpoint (or
// something in its place) answers with, Exchange fails closed or returns
// a usable token:
//   - a refusal is UPSTREAM_TOKEN_EXCHANGE_REFUSED wrapping ErrRefused (a
//     status other than 200) or ErrAnswer (a 200 that is not a token); the
//     agent's message is the fixed one, none of the provider's text; and
//     neither the caller's token nor the client secret is in the error's
//     text at all (it is logged and audited: package doc, "never in an
//     error, a log line, an audit record");
//   - a token is only ever the access_token a plain JSON reader sees in a
//     200 answer with token_type Bearer: printable ASCII, at most 16 KiB,
//     never the caller's own token;
//   - it is cached only when the answer says it lives over 30 s, and never
//     served from the cache in its last 30 s.
func FuzzExchangeAnswer(f *testing.F) {
	const ok = `{"access_token":"exchanged.tok-1","token_type":"Bearer","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","expires_in":300}`
	for _, s := range []struct {
		status uint16
		body   string
	}{
		{200, ok},
		{200, `{"access_token":"t","token_type":"bearer"}`},
		{200, `{"access_token":"t","token_type":"bearer","expires_in":3600.5}`},
		{200, `{"access_token":"t","token_type":"bearer","expires_in":"300"}`},
		{200, `{"access_token":"t","token_type":"bearer","expires_in":-5}`},
		{200, `{"access_token":"t","token_type":"bearer","expires_in":1e300}`},
		{200, `{"access_token":"t","token_type":"bearer","expires_in":2e10}`},
		{200, `{"access_token":"t","token_type":"N_A","expires_in":60}`},
		{200, `{"access_token":"t","token_type":"Bearer","issued_token_type":"urn:ietf:params:oauth:token-type:id_token"}`},
		{200, `{"access_token":"a b","token_type":"Bearer"}`},
		{200, `{"access_token":"\u00e9t\u0000","token_type":"Bearer"}`},
		{200, `{"access_token":"` + fuzzSubject + `","token_type":"Bearer","expires_in":300}`},
		{200, `{"access_token":"x","access_token":"y","token_type":"Bearer","expires_in":90}`},
		{200, `not json`},
		{200, ``},
		{400, `{"error":"invalid_grant","error_description":"bad token ` + fuzzSubject + `, secret ` + fuzzSecret + `"}`},
		{401, `{"error":"invalid_client","error_description":"client authentication failed"}`},
		{403, `{"error":"unauthorized_client"}`},
		{500, `<html>oops</html>`},
		{302, ``},
		{204, ok},
	} {
		f.Add(s.status, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, status uint16, body []byte) {
		code := 100 + int(status)%500
		rt := &answerTransport{status: code, body: body}
		now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
		clock := func() time.Time { return now }
		ex := tokenexchange.New(&tokenexchange.Options{Client: &http.Client{Transport: rt}, Now: clock})
		up := upstreamWith("https://idp.test/token", "airlock", "https://upstream.test/mcp")
		ctx := tokenexchange.WithCaller(context.Background(), tokenexchange.Caller{Token: fuzzSubject, Principal: "https://idp.test|agent",
			ClientID: "agent", Scopes: []string{"airlock.read"}})

		tok, err := ex.Exchange(ctx, up, fuzzSecret)
		if rt.asked != 1 {
			t.Fatalf("the provider was asked %d times", rt.asked)
		}
		if err != nil {
			var v *violation.Error
			if !errors.As(err, &v) || v.Code != violation.UpstreamTokenExchange {
				t.Fatalf("untyped refusal: %v", err)
			}
			want := tokenexchange.ErrAnswer
			if code != http.StatusOK {
				want = tokenexchange.ErrRefused
			}
			if !errors.Is(err, want) {
				t.Fatalf("status %d: err = %v, want it to wrap %v", code, err, want)
			}
			if v.Message != `the authorization server did not grant a token for upstream "up" on the calling agent's behalf; the call is refused` {
				t.Fatalf("the agent's message is not the fixed one: %q", v.Message)
			}
			for _, s := range []string{fuzzSubject, fuzzSecret} {
				if strings.Contains(err.Error(), s) || strings.Contains(v.Public(), s) {
					t.Fatalf("status %d, body %q: the error holds a secret (%.8s…): %s", code, body, s, err)
				}
			}
			if ex.Len() != 0 {
				t.Fatal("a refusal was cached")
			}
			return
		}

		if code != http.StatusOK {
			t.Fatalf("status %d granted a token", code)
		}
		if tok == "" || len(tok) > 16<<10 || tok == fuzzSubject || strings.ContainsFunc(tok, func(r rune) bool { return r <= 0x20 || r >= 0x7f }) {
			t.Fatalf("unusable token %q granted", tok)
		}
		var plain struct {
			AccessToken string          `json:"access_token"`
			TokenType   string          `json:"token_type"`
			ExpiresIn   json.RawMessage `json:"expires_in"`
		}
		if err := json.Unmarshal(body, &plain); err != nil || plain.AccessToken != tok || !strings.EqualFold(plain.TokenType, "bearer") {
			t.Fatalf("granted %q from an answer a plain reader sees as %+v (%v)", tok, plain, err)
		}

		// The cache: only a token said to live over 30 s, never in its
		// last 30 s.
		var secs float64
		said := len(plain.ExpiresIn) > 0 && json.Unmarshal(plain.ExpiresIn, &secs) == nil
		if ex.Len() == 1 && (!said || secs <= 30) {
			t.Fatalf("cached a token said to live %s", plain.ExpiresIn)
		}
		if ex.Len() == 0 {
			return
		}
		if again, err := ex.Exchange(ctx, up, fuzzSecret); err != nil || again != tok || rt.asked != 1 {
			t.Fatalf("cached token not served: %q, %v, asked %d", again, err, rt.asked)
		}
		if secs < 1e9 { // within the clock's range
			now = now.Add(time.Duration(secs)*time.Second - 29*time.Second)
			_, _ = ex.Exchange(ctx, up, fuzzSecret)
			if rt.asked != 2 {
				t.Fatalf("a token said to live %gs served from the cache 29 s before it expires", secs)
			}
		}
	})
}
