package tokenexchange

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// RFC 8693's names.
const (
	grantType       = "urn:ietf:params:oauth:grant-type:token-exchange"
	accessTokenType = "urn:ietf:params:oauth:token-type:access_token"
)

// Limits.
const (
	// DefaultMaxEntries bounds the cache of exchanged tokens.
	DefaultMaxEntries = 4096
	// maxAnswerBytes bounds the provider's answer.
	maxAnswerBytes = 64 << 10
	// maxTokenBytes bounds an exchanged token (as the edge bounds one).
	maxTokenBytes = 16 << 10
	// earlyRenewal: a cached token is not used in its last seconds, so it
	// does not expire on its way to the upstream.
	earlyRenewal = 30 * time.Second
	// requestTimeout bounds one exchange (within the call's own timeout).
	requestTimeout = 10 * time.Second
)

// Errors an exchange fails with; each reaches the agent as a violation
// with code UPSTREAM_TOKEN_EXCHANGE_REFUSED wrapping one of them.
var (
	// ErrNoCaller: the call carries no validated OAuth access token.
	ErrNoCaller = errors.New("the call carries no OAuth access token to exchange")
	// ErrCallerExpired: the caller's access token has expired.
	ErrCallerExpired = errors.New("the caller's access token has expired")
	// ErrRefused: the provider refused the exchange.
	ErrRefused = errors.New("the authorization server refused the token exchange")
	// ErrAnswer: the provider's answer is not a usable token.
	ErrAnswer = errors.New("the token exchange's answer is unusable")
)

// Caller is the validated access token of the call and what it says.
type Caller struct {
	Token     string // the raw token: exchanged, never sent elsewhere
	Principal string // issuer|subject
	ClientID  string
	Scopes    []string
	Expiry    time.Time // zero: unknown (the provider judges it)
}

type callerKey struct{}

// WithCaller returns ctx carrying c (the server's HTTP edge, after the
// token was validated).
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller ctx carries.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok && c.Token != ""
}

// Exchanger performs and caches exchanges. Safe for concurrent use.
type Exchanger struct {
	client *http.Client
	now    func() time.Time
	max    int

	mu    sync.Mutex
	cache map[cacheKey]cached
}

// cacheKey is who an exchanged token is for and what it was asked for.
type cacheKey struct {
	principal, client, scopes  string
	upstream, endpoint, asking string
	audience, scope            string
}

type cached struct {
	token string
	exp   time.Time
}

// Options configure an Exchanger; nil means defaults.
type Options struct {
	// Client reaches token endpoints (default: 10 s timeout, redirects
	// refused).
	Client *http.Client
	// Now is the clock.
	Now func() time.Time
	// MaxEntries bounds the cache (default DefaultMaxEntries).
	MaxEntries int
}

// New returns an Exchanger.
func New(opts *Options) *Exchanger {
	var o Options
	if opts != nil {
		o = *opts
	}
	e := &Exchanger{client: o.Client, now: o.Now, max: o.MaxEntries, cache: map[cacheKey]cached{}}
	if e.client == nil {
		e.client = &http.Client{Timeout: requestTimeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("redirect refused")
		}}
	}
	if e.now == nil {
		e.now = time.Now
	}
	if e.max <= 0 {
		e.max = DefaultMaxEntries
	}
	return e
}

// Exchange returns a token for a call to up (which has a token_exchange)
// on behalf of the caller ctx carries, from the cache or the provider,
// authenticating as the configured client with clientSecret.
func (e *Exchanger) Exchange(ctx context.Context, up config.Upstream, clientSecret string) (string, error) {
	te := up.TokenExchange
	if te == nil {
		return "", fmt.Errorf("upstream %q has no token_exchange", up.ID)
	}
	c, ok := CallerFrom(ctx)
	if !ok {
		return "", refuse(up.ID, ErrNoCaller, "upstream %q acts on behalf of the calling agent's OAuth identity, and this call carries no OAuth access token (a static role token or stdio); the call is refused", up.ID)
	}
	now := e.now()
	if !c.Expiry.IsZero() && !now.Before(c.Expiry) {
		return "", refuse(up.ID, ErrCallerExpired, "the calling agent's access token has expired; get a new one and call again")
	}
	scopes := slices.Clone(c.Scopes)
	slices.Sort(scopes)
	k := cacheKey{principal: c.Principal, client: c.ClientID, scopes: strings.Join(scopes, " "), upstream: up.ID,
		endpoint: te.TokenEndpoint, asking: te.ClientID, audience: te.Audience, scope: te.Scope}
	if tok, ok := e.lookup(k, now); ok {
		return tok, nil
	}
	tok, life, err := e.request(ctx, te, c.Token, clientSecret)
	if err != nil {
		return "", refuse(up.ID, err, "the authorization server did not grant a token for upstream %q on the calling agent's behalf; the call is refused", up.ID)
	}
	if life > earlyRenewal {
		e.store(k, cached{token: tok, exp: now.Add(life)}, now)
	}
	return tok, nil
}

func refuse(upstream string, err error, format string, args ...any) error {
	return violation.Wrap(violation.UpstreamTokenExchange, fmt.Errorf("upstream %s: %w", upstream, err), format, args...)
}

func (e *Exchanger) lookup(k cacheKey, now time.Time) (string, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	c, ok := e.cache[k]
	if !ok || !now.Add(earlyRenewal).Before(c.exp) {
		return "", false
	}
	return c.token, true
}

// store caches c under k; a full cache first drops what has expired,
// then the entry nearest its expiry.
func (e *Exchanger) store(k cacheKey, c cached, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.cache[k]; !ok && len(e.cache) >= e.max {
		var soonest cacheKey
		var at time.Time
		for key, v := range e.cache {
			if !now.Before(v.exp) {
				delete(e.cache, key)
				continue
			}
			if at.IsZero() || v.exp.Before(at) {
				soonest, at = key, v.exp
			}
		}
		if len(e.cache) >= e.max {
			delete(e.cache, soonest)
		}
	}
	e.cache[k] = c
}

// Len is the number of cached tokens.
func (e *Exchanger) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.cache)
}

// answer is RFC 8693 section 2.2's success and RFC 6749 5.2's error.
type answer struct {
	AccessToken     string          `json:"access_token"`
	IssuedTokenType string          `json:"issued_token_type"`
	TokenType       string          `json:"token_type"`
	ExpiresIn       json.RawMessage `json:"expires_in"`
	Error           string          `json:"error"`
	Description     string          `json:"error_description"`
}

// request asks the provider for the exchange and returns the token and
// how long it lives (0: not said, not cached).
func (e *Exchanger) request(ctx context.Context, te *config.TokenExchange, subject, secret string) (string, time.Duration, error) {
	form := url.Values{"grant_type": {grantType}, "subject_token": {subject}, "subject_token_type": {accessTokenType},
		"requested_token_type": {accessTokenType}, "audience": {te.Audience}}
	if te.Scope != "" {
		form.Set("scope", te.Scope)
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, te.TokenEndpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, fmt.Errorf("token endpoint: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 2.3.1: form-encoded, then Basic.
	req.SetBasicAuth(url.QueryEscape(te.ClientID), url.QueryEscape(secret))
	resp, err := e.client.Do(req)
	if err != nil {
		// The URL is the configured endpoint; the error never holds the form.
		return "", 0, fmt.Errorf("%w: POST %s: %v", ErrRefused, req.URL.Redacted(), errors.Unwrap(err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil || len(body) > maxAnswerBytes {
		return "", 0, fmt.Errorf("%w: reading the answer (status %d)", ErrAnswer, resp.StatusCode)
	}
	var a answer
	jerr := json.Unmarshal(body, &a)
	said := func(field string, n int) string { return providerText(field, n, subject, secret) }
	if resp.StatusCode != http.StatusOK {
		return "", 0, fmt.Errorf("%w: status %d, error %q: %q", ErrRefused, resp.StatusCode, said(a.Error, 64), said(a.Description, 200))
	}
	switch {
	case jerr != nil:
		return "", 0, fmt.Errorf("%w: not JSON", ErrAnswer)
	case a.AccessToken == "" || len(a.AccessToken) > maxTokenBytes || strings.ContainsFunc(a.AccessToken, func(r rune) bool { return r <= 0x20 || r >= 0x7f }):
		return "", 0, fmt.Errorf("%w: no usable access_token", ErrAnswer)
	case a.AccessToken == subject:
		return "", 0, fmt.Errorf("%w: the answer is the caller's own token", ErrAnswer)
	case !strings.EqualFold(a.TokenType, "bearer"):
		return "", 0, fmt.Errorf("%w: token_type %q, not Bearer", ErrAnswer, said(a.TokenType, 32))
	case a.IssuedTokenType != "" && a.IssuedTokenType != accessTokenType:
		return "", 0, fmt.Errorf("%w: issued_token_type %q, not an access token", ErrAnswer, said(a.IssuedTokenType, 80))
	}
	var secs float64
	if len(a.ExpiresIn) > 0 && json.Unmarshal(a.ExpiresIn, &secs) != nil {
		return "", 0, fmt.Errorf("%w: expires_in is not a number", ErrAnswer)
	}
	return a.AccessToken, time.Duration(secs) * time.Second, nil
}

// providerText makes the text of a provider's answer (error, its
// description, a token type) fit for the log and the audit trail: printable
// ASCII, with the subject token and the client secret replaced, at most n
// bytes. In that order: a provider that echoes the token with an
// unprintable byte inside it ("…Km0B\x92q") must not get it past the
// replacement and then have the byte dropped, nor may a field go out
// unreplaced because it is not the description (the "error" code itself
// can echo the token).
func providerText(s string, n int, secrets ...string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r >= 0x7f {
			return -1
		}
		return r
	}, s)
	for _, v := range secrets {
		if v != "" {
			s = strings.ReplaceAll(s, v, "[REDACTED]")
		}
	}
	if len(s) > n {
		s = s[:n]
	}
	return s
}
