package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/airlock-dev/airlock/internal/config"
)

// MaxTokenBytes bounds a token before any parsing: real access tokens are
// a few KiB; a larger one is refused unread.
const MaxTokenBytes = 16 << 10

// Token is what a validated access token says: claims only, never the
// token itself.
type Token struct {
	Issuer   string
	Subject  string
	ClientID string // client_id, else azp; may be empty
	Scopes   []string
	Groups   []string
	Expiry   time.Time
}

// Principal is the token's principal in the audit trail: issuer|sub, so
// equal subjects of two issuers never share contexts or sessions.
func (t *Token) Principal() string { return t.Issuer + "|" + t.Subject }

// Validator checks access tokens against the configured issuers. It is
// safe for concurrent use; key sets are cached per issuer.
type Validator struct {
	cfg     config.OAuth
	issuers []*issuer
	byName  map[string]*issuer
	skew    time.Duration
	now     func() time.Time
	secrets map[string]string // issuer → introspection client secret
	cache   *introspectionCache
}

// Options tune a Validator; nil means defaults.
type Options struct {
	// Client reaches the authorization servers (default: 10 s timeout,
	// redirects refused).
	Client *http.Client
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// ErrSecret is returned by New when an introspection client secret is
// configured but its variable or file is empty.
var ErrSecret = errors.New("introspection client secret is empty")

// New builds a Validator for cfg, as defaulted and checked by package
// config. Introspection secrets are read now; nothing is fetched until the
// first token arrives, so an authorization server that is down does not
// stop Airlock from starting (its tokens are refused meanwhile).
func New(cfg config.OAuth, readSecret func(config.TokenSource) (string, error), opts *Options) (*Validator, error) {
	if opts == nil {
		opts = &Options{}
	}
	client, now := opts.Client, opts.Now
	if client == nil {
		client = newHTTPClient()
	}
	if now == nil {
		now = time.Now
	}
	v := &Validator{cfg: cfg, byName: map[string]*issuer{}, skew: config.Seconds(cfg.ClockSkewSeconds), now: now,
		secrets: map[string]string{}, cache: newIntrospectionCache()}
	for _, ic := range cfg.Issuers {
		is := &issuer{cfg: ic, client: client, now: now,
			ttl: config.Seconds(cfg.JWKSCacheSeconds), every: config.Seconds(cfg.JWKSMinRefreshSeconds)}
		for _, a := range ic.Algorithms {
			if !slices.Contains(config.OAuthAlgorithms, a) {
				return nil, fmt.Errorf("issuer %s: algorithm %q: %w", ic.Issuer, a, config.ErrInvalid)
			}
			is.algs = append(is.algs, jose.SignatureAlgorithm(a))
		}
		if ic.Introspection != nil {
			secret, err := readSecret(ic.Introspection.ClientSecret)
			if err != nil {
				return nil, fmt.Errorf("issuer %s: %w", ic.Issuer, err)
			}
			if secret == "" {
				return nil, fmt.Errorf("issuer %s: %w", ic.Issuer, ErrSecret)
			}
			v.secrets[ic.Issuer] = secret
		}
		v.issuers = append(v.issuers, is)
		v.byName[ic.Issuer] = is
	}
	return v, nil
}

// Validate checks raw, the bearer token of a request, and returns its
// claims. Every refusal wraps one of the package's sentinels.
func (v *Validator) Validate(ctx context.Context, raw string) (*Token, error) {
	if len(raw) > MaxTokenBytes {
		return nil, fmt.Errorf("%d bytes: %w", len(raw), ErrMalformed)
	}
	if strings.Count(raw, ".") != 2 {
		return v.introspect(ctx, raw)
	}
	return v.validateJWT(ctx, raw)
}

// allAlgorithms is the parse-time allow-list: the union of every issuer's
// algorithms, all asymmetric (package config refuses others). The issuer's
// own list is applied once iss is known.
func (v *Validator) allAlgorithms() []jose.SignatureAlgorithm {
	var all []jose.SignatureAlgorithm
	for _, is := range v.issuers {
		for _, a := range is.algs {
			if !slices.Contains(all, a) {
				all = append(all, a)
			}
		}
	}
	return all
}

// accessClaims are the claims beyond RFC 7519's registered ones that
// Airlock reads.
type accessClaims struct {
	ClientID string          `json:"client_id"`
	AZP      string          `json:"azp"`
	Scope    json.RawMessage `json:"scope"`
	SCP      json.RawMessage `json:"scp"`
}

func (v *Validator) validateJWT(ctx context.Context, raw string) (*Token, error) {
	tok, err := jwt.ParseSigned(raw, v.allAlgorithms())
	if err != nil {
		// go-jose refuses an algorithm off the list (none, HS256, ...)
		// while parsing; tell that apart for the audit trail.
		if alg, ok := headerAlg(raw); ok && !slices.Contains(v.allAlgorithms(), jose.SignatureAlgorithm(alg)) {
			return nil, fmt.Errorf("alg %.32q: %w", alg, ErrAlgorithm)
		}
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if len(tok.Headers) != 1 {
		return nil, fmt.Errorf("%d signatures: %w", len(tok.Headers), ErrMalformed)
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	// Exact match against configuration only: the token's own iss is never
	// fetched from.
	is, ok := v.byName[unverified.Issuer]
	if !ok {
		return nil, fmt.Errorf("iss %.200q: %w", unverified.Issuer, ErrUnknownIssuer)
	}
	h := tok.Headers[0]
	alg := jose.SignatureAlgorithm(h.Algorithm)
	if !slices.Contains(is.algs, alg) {
		return nil, fmt.Errorf("alg %.32q for issuer %s: %w", h.Algorithm, is.cfg.Issuer, ErrAlgorithm)
	}
	keys, err := is.keysFor(ctx, h.KeyID, alg)
	if err != nil {
		return nil, err
	}
	var std jwt.Claims
	var extra accessClaims
	var all map[string]any
	verified := false
	for _, k := range keys {
		if err := tok.Claims(k.Key, &std, &extra, &all); err == nil {
			verified = true
			break
		}
	}
	if !verified {
		return nil, fmt.Errorf("issuer %s, kid %.64q: %w", is.cfg.Issuer, h.KeyID, ErrSignature)
	}
	if err := v.checkClaims(is, &std); err != nil {
		return nil, err
	}
	t := &Token{Issuer: std.Issuer, Subject: std.Subject, ClientID: extra.ClientID, Expiry: std.Expiry.Time()}
	if t.ClientID == "" {
		t.ClientID = extra.AZP
	}
	t.Scopes = scopes(extra.Scope, extra.SCP)
	t.Groups = groups(all, is.cfg.GroupsClaim)
	return t, nil
}

// checkClaims applies RFC 9068's checks to verified claims: the issuer,
// this resource as audience (RFC 8707), exp required, exp/nbf/iat within
// the skew, and a subject.
func (v *Validator) checkClaims(is *issuer, c *jwt.Claims) error {
	if c.Expiry == nil {
		return fmt.Errorf("no exp: %w", ErrClaims)
	}
	if err := checkSubject(c.Subject); err != nil {
		return err
	}
	err := c.ValidateWithLeeway(jwt.Expected{Issuer: is.cfg.Issuer, AnyAudience: jwt.Audience{is.cfg.Audience}, Time: v.now()}, v.skew)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jwt.ErrInvalidAudience):
		return fmt.Errorf("aud %.200q, want %s: %w", []string(c.Audience), is.cfg.Audience, ErrAudience)
	case errors.Is(err, jwt.ErrExpired):
		return fmt.Errorf("exp %s: %w", c.Expiry.Time().UTC().Format(time.RFC3339), ErrExpired)
	case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
		return fmt.Errorf("%w: %w", ErrNotYetValid, err)
	}
	return fmt.Errorf("%w: %w", ErrClaims, err)
}

// headerAlg reads the alg of a compact JWS's protected header, only to
// name the cause of a refusal go-jose already made.
func headerAlg(raw string) (string, bool) {
	head, _, _ := strings.Cut(raw, ".")
	b, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return "", false
	}
	var h struct {
		Alg string `json:"alg"`
	}
	if json.Unmarshal(b, &h) != nil {
		return "", false
	}
	return h.Alg, true
}

// scopes reads scope (a space-separated string, RFC 9068 / RFC 8693) or
// scp (a string or array, as Azure AD and Okta write it).
func scopes(scope, scp json.RawMessage) []string {
	for _, raw := range []json.RawMessage{scope, scp} {
		if len(raw) == 0 {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return strings.Fields(s)
		}
		var list []string
		if json.Unmarshal(raw, &list) == nil {
			return list
		}
	}
	return nil
}

// groups reads the claim at a dotted path (groups, realm_access.roles): a
// string or an array of strings; anything else is no groups.
func groups(all map[string]any, path string) []string {
	var cur any = all
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	switch g := cur.(type) {
	case string:
		return []string{g}
	case []any:
		var out []string
		for _, e := range g {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// checkSubject refuses a sub that is not 1 to 255 printable ASCII
// characters (OpenID Connect Core §2's bound on sub). The principal is
// issuer|sub, and it is printed by the CLI to the operator's terminal,
// written in logs and shown in reports: a newline, an escape sequence or
// a bidirectional control in it would forge lines or drive the terminal,
// and an endless one would sit in every record of the session.
func checkSubject(sub string) error {
	if sub == "" {
		return fmt.Errorf("no sub: %w", ErrClaims)
	}
	if len(sub) > 255 {
		return fmt.Errorf("sub of %d bytes, more than 255: %w", len(sub), ErrClaims)
	}
	for i := 0; i < len(sub); i++ {
		if sub[i] < 0x20 || sub[i] > 0x7e {
			return fmt.Errorf("sub holds a byte outside printable ASCII at %d: %w", i, ErrClaims)
		}
	}
	return nil
}
