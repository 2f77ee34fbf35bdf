package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/edge/oauth"
	"github.com/airlock-dev/airlock/internal/execution/tokenexchange"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// ErrNoToken is returned when a configured token source is empty.
var ErrNoToken = errors.New("token source is empty")

// credential is one accepted bearer token, held only as its SHA-256 so the
// comparison is constant-time over fixed-length values and the token itself
// is not kept in memory longer than loading takes.
type credential struct {
	sum       [32]byte
	role      string
	principal string
	bind      contexts.Binding
}

type authenticator struct {
	creds     []credential
	anonymous string // role for requests without a token; "" = refuse
	warnings  []string
	// oauth validates OAuth access tokens when transports.http.oauth is
	// set (nil otherwise); oauthCfg is the configuration it was built from.
	oauth    *oauth.Validator
	oauthCfg *config.OAuth
}

// MinTokenLength is the shortest token accepted without a warning: 32
// characters is 128 bits as hex, what `openssl rand -hex 16` prints.
const MinTokenLength = 32

// newAuthenticator loads every role's tokens. A token source whose variable
// or file is empty or missing is skipped (that credential cannot be used) —
// it never becomes "any token accepted".
//
// The OAuth validator of prev is kept when its configuration is unchanged,
// so a token file's reload does not drop the cached key sets.
func newAuthenticator(cfg *config.Config, prev *authenticator) (*authenticator, error) {
	a := &authenticator{anonymous: cfg.Transports.HTTP.AnonymousRole}
	if oc := cfg.Transports.HTTP.OAuth; oc != nil {
		a.oauthCfg = oc
		if prev != nil && prev.oauth != nil && reflect.DeepEqual(prev.oauthCfg, oc) {
			a.oauth = prev.oauth
		} else {
			v, err := oauth.New(*oc, readSecret, nil)
			if err != nil {
				return nil, fmt.Errorf("transports.http.oauth: %w", err)
			}
			a.oauth = v
		}
	}
	for role, r := range cfg.Roles {
		for _, t := range r.Tokens {
			tok, name, err := readToken(t.Source())
			if errors.Is(err, ErrNoToken) {
				a.warnings = append(a.warnings, fmt.Sprintf("role %s: token source %s is unset or empty: that credential cannot be used", role, name))
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("role %s: %w", role, err)
			}
			if len(tok) < MinTokenLength {
				a.warnings = append(a.warnings, fmt.Sprintf("role %s: token from %s is %d characters; use at least %d random ones (openssl rand -hex 16)", role, name, len(tok), MinTokenLength))
			}
			a.creds = append(a.creds, credential{sum: sha256.Sum256([]byte(tok)), role: role, principal: role + "/" + name, bind: binding(t.ContextBinding)})
		}
	}
	slices.Sort(a.warnings) // roles are a map: one order, so a reload can tell a change
	if len(a.creds) == 0 && a.oauth == nil && a.anonymous == "" {
		// `airlock init`'s configuration has only the stdio role: served
		// over HTTP it refused everyone, and nothing said why.
		a.warnings = append(a.warnings, noHTTPCredentials)
	}
	return a, nil
}

// binding is what a configured credential allows of contexts.
func binding(b config.ContextBinding) contexts.Binding {
	return contexts.Binding{Context: b.Context, Required: b.RequireContext}
}

// noHTTPCredentials is the warning of an HTTP server no client can pass.
const noHTTPCredentials = "no HTTP client can authenticate: no role has a usable token, transports.http.oauth is not set and there is no anonymous_role, " +
	"so every request to /mcp and /sse gets 401; give a role tokens (README: \"Hosted agents\")"

// readSecret reads an introspection client secret from its source.
func readSecret(src config.TokenSource) (string, error) {
	tok, _, err := readToken(src)
	return tok, err
}

func readToken(src config.TokenSource) (token, name string, err error) {
	if src.Env != "" {
		token, name = os.Getenv(src.Env), "env:"+src.Env
	} else {
		b, rerr := os.ReadFile(src.File)
		if rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return "", "", fmt.Errorf("reading token file: %w", rerr)
		}
		token, name = strings.TrimRight(string(b), "\r\n"), "file:"+filepath.Base(src.File)
	}
	if strings.TrimSpace(token) == "" {
		return "", name, ErrNoToken
	}
	return token, name, nil
}

// warn logs what is wrong with the configured tokens (never a token).
func (a *authenticator) warn(log *slog.Logger) {
	for _, w := range a.warnings {
		log.Warn(w)
	}
}

// authResult is the outcome of authenticating one request: an identity,
// or the status, challenge and audit detail of the refusal.
type authResult struct {
	id identity
	ok bool
	// caller is a validated OAuth access token, for an upstream's token
	// exchange (never set for a static token, never recorded).
	caller tokenexchange.Caller
	// On refusal: 401 or 403, the WWW-Authenticate value, a fixed kind for
	// counting refusals apart, and a reason for the audit record (never
	// the token).
	status    int
	challenge string
	kind      string
	reason    string
}

// Refusal kinds (fixed strings: a token's contents never mint one).
const (
	kindNoToken           = "no bearer token"
	kindNotRecognised     = "bearer token not recognised"
	kindInsufficientScope = "token maps to no role"
)

// identify authenticates r: the anonymous role when there is no
// Authorization header and one is configured; a static role token
// (constant-time); else, with OAuth configured, an access token of a
// configured issuer mapped to a role. A valid access token that maps to no
// role is a 403 insufficient_scope, anything else refused a 401.
func (a *authenticator) identify(r *http.Request) authResult {
	h := r.Header.Get("Authorization")
	scheme, tok, found := strings.Cut(h, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		if h == "" && a.anonymous != "" {
			return authResult{id: identity{Principal: "anonymous", Role: a.anonymous}, ok: true}
		}
		kind := kindNoToken
		if h != "" {
			kind = kindNotRecognised
		}
		return a.unauthorized(h != "", kind, kind)
	}
	if id, ok := a.static(tok); ok {
		return authResult{id: id, ok: true}
	}
	if a.oauth == nil {
		return a.unauthorized(true, kindNotRecognised, kindNotRecognised)
	}
	t, err := a.oauth.Validate(r.Context(), tok)
	if err != nil {
		return a.unauthorized(true, oauth.Kind(err), "access token refused: "+err.Error())
	}
	id := identity{Principal: t.Principal(), ClientID: t.ClientID}
	rule, ok := a.oauth.Rule(t)
	if !ok {
		return authResult{id: id, status: http.StatusForbidden, kind: kindInsufficientScope,
			challenge: oauth.InsufficientScope(a.oauthCfg, a.oauth.NeededScope(t)),
			reason:    fmt.Sprintf("access token of %s (client %q, scopes %q) maps to no role in transports.http.oauth.role_mapping", id.Principal, t.ClientID, t.Scopes)}
	}
	id.Role, id.Binding = rule.Role, binding(rule.ContextBinding)
	return authResult{id: id, ok: true, caller: tokenexchange.Caller{Token: tok, Principal: id.Principal, ClientID: t.ClientID, Scopes: t.Scopes, Expiry: t.Expiry}}
}

// unauthorized is a 401 with the challenge clients follow: the protected
// resource metadata's URL when OAuth is configured (the MCP authorization
// spec's discovery starts there), a plain Bearer challenge otherwise.
func (a *authenticator) unauthorized(presented bool, kind, reason string) authResult {
	challenge := `Bearer realm="airlock"`
	if a.oauthCfg != nil {
		challenge = oauth.Challenge(a.oauthCfg, presented)
	}
	return authResult{status: http.StatusUnauthorized, challenge: challenge, kind: kind, reason: reason}
}

// static returns the identity of a static role token, or false.
func (a *authenticator) static(tok string) (identity, bool) {
	sum := sha256.Sum256([]byte(tok))
	match := -1
	// Compare against every credential, always, so timing does not reveal
	// which (or whether an earlier) credential matched.
	for i := range a.creds {
		if subtle.ConstantTimeCompare(sum[:], a.creds[i].sum[:]) == 1 {
			match = i
		}
	}
	if match < 0 {
		return identity{}, false
	}
	c := &a.creds[match]
	return identity{Principal: c.principal, Role: c.role, Binding: c.bind}, true
}
