package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// OAuth makes Airlock an OAuth 2.1 resource server (the MCP authorization
// spec): it publishes protected resource metadata (RFC 9728) naming its
// authorization servers, and accepts access tokens those servers issued for
// it, mapping their claims to roles. Package oauth validates the tokens.
type OAuth struct {
	Resource             string        `json:"resource" jsonschema:"description=This server's canonical resource URI as clients name it (RFC 8707)\\, e.g. https://airlock.example/mcp. Tokens must carry it as their audience; the metadata is served at /.well-known/oauth-protected-resource and the path-suffixed form."`
	AuthorizationServers []string      `json:"authorization_servers,omitempty" jsonschema:"description=Issuer URLs published in the protected resource metadata (default: every issuers[].issuer)."`
	ScopesSupported      []string      `json:"scopes_supported,omitempty" jsonschema:"description=Scopes published in the metadata and named in WWW-Authenticate challenges."`
	ResourceName         string        `json:"resource_name,omitempty" jsonschema:"description=Human-readable name in the metadata (default: server.name)."`
	Issuers              []OAuthIssuer `json:"issuers" jsonschema:"description=Authorization servers whose access tokens are accepted."`
	RoleMapping          []RoleMapping `json:"role_mapping" jsonschema:"description=Rules from token claims to roles\\, first match wins; a valid token no rule maps gets 403 insufficient_scope."`
	// ClockSkewSeconds bounds how far exp/nbf/iat may be off.
	ClockSkewSeconds int `json:"clock_skew_seconds,omitempty" jsonschema:"minimum=0,maximum=300,description=Leeway for exp\\, nbf and iat (default 30\\, at most 300)."`
	JWKSCacheSeconds int `json:"jwks_cache_seconds,omitempty" jsonschema:"minimum=0,description=Seconds a fetched key set is trusted before it is fetched again (default 300)."`
	// JWKSMinRefreshSeconds rate-limits refetches on an unknown kid, so a
	// flood of tokens with invented kids cannot turn Airlock into a
	// cannon against the authorization server.
	JWKSMinRefreshSeconds int `json:"jwks_min_refresh_seconds,omitempty" jsonschema:"minimum=0,description=Least seconds between two fetches of one issuer's keys or metadata (default 10); a token with an unknown kid triggers at most one fetch per interval."`
}

// OAuthIssuer is one trusted authorization server.
type OAuthIssuer struct {
	Issuer string `json:"issuer" jsonschema:"description=Issuer identifier\\, exactly as in the tokens' iss claim and the server's metadata."`
	// Audience defaults to OAuth.Resource; an identity provider that
	// cannot put a URI in aud (Auth0's API identifier is one) sets it.
	Audience string `json:"audience,omitempty" jsonschema:"description=Required aud value (default: oauth.resource)."`
	JWKSURI  string `json:"jwks_uri,omitempty" jsonschema:"description=Key set URL; default: discovered from the issuer's RFC 8414 or OpenID Connect metadata."`
	// Algorithms is the signature allow-list: asymmetric only, so a token
	// signed with HS256 using the public key as the secret, or alg none,
	// never verifies.
	Algorithms    []string            `json:"algorithms,omitempty" jsonschema:"description=Accepted signature algorithms (default [RS256\\, ES256]); asymmetric only: RS256/384/512\\, PS256/384/512\\, ES256/384/512\\, EdDSA."`
	GroupsClaim   string              `json:"groups_claim,omitempty" jsonschema:"description=Claim holding the subject's groups or roles\\, a dotted path for nested claims (default groups; Keycloak: realm_access.roles)."`
	Introspection *OAuthIntrospection `json:"introspection,omitempty" jsonschema:"description=RFC 7662 introspection for opaque (non-JWT) access tokens."`
}

// OAuthIntrospection is how Airlock asks an issuer about an opaque token.
type OAuthIntrospection struct {
	Endpoint     string      `json:"endpoint,omitempty" jsonschema:"description=Introspection endpoint (default: introspection_endpoint from the issuer's metadata)."`
	ClientID     string      `json:"client_id" jsonschema:"description=Airlock's client id at the issuer (HTTP basic authentication)."`
	ClientSecret TokenSource `json:"client_secret" jsonschema:"description=Where the client secret is read from (env or file)."`
}

// RoleMapping maps tokens to a role. Every condition given must hold:
// all listed scopes granted, and one of each other list matching.
type RoleMapping struct {
	Role      string   `json:"role" jsonschema:"description=Airlock role granted."`
	Issuer    string   `json:"issuer,omitempty" jsonschema:"description=Only tokens from this issuer (default: any configured issuer)."`
	Scopes    []string `json:"scopes,omitempty" jsonschema:"description=Scopes the token must all carry (scope or scp claim)."`
	Groups    []string `json:"groups,omitempty" jsonschema:"description=Groups of which the token must carry one (issuers[].groups_claim)."`
	Subjects  []string `json:"subjects,omitempty" jsonschema:"description=sub values of which the token must carry one."`
	ClientIDs []string `json:"client_ids,omitempty" jsonschema:"description=client_id (or azp) values of which the token must carry one."`
	// A rule that grants a restricted agent its role binds it: the
	// binding is the matched rule's, per token (issue 26 item 2).
	ContextBinding `yaml:",inline"`
}

// OAuthAlgorithms are the signature algorithms an issuer may be allowed:
// public-key ones only.
var OAuthAlgorithms = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// OAuth defaults.
const (
	DefaultOAuthClockSkewSeconds = 30
	MaxOAuthClockSkewSeconds     = 300
	DefaultJWKSCacheSeconds      = 300
	DefaultJWKSMinRefreshSeconds = 10
	DefaultOAuthGroupsClaim      = "groups"
)

// DefaultOAuthAlgorithms is what an issuer without algorithms accepts.
var DefaultOAuthAlgorithms = []string{"RS256", "ES256"}

func (o *OAuth) applyDefaults(serverName string) {
	setDefault(&o.ClockSkewSeconds, DefaultOAuthClockSkewSeconds)
	setDefault(&o.JWKSCacheSeconds, DefaultJWKSCacheSeconds)
	setDefault(&o.JWKSMinRefreshSeconds, DefaultJWKSMinRefreshSeconds)
	if o.ResourceName == "" {
		o.ResourceName = serverName
	}
	if len(o.AuthorizationServers) == 0 {
		for _, is := range o.Issuers {
			o.AuthorizationServers = append(o.AuthorizationServers, is.Issuer)
		}
	}
	for i := range o.Issuers {
		is := &o.Issuers[i]
		if is.Audience == "" {
			is.Audience = o.Resource
		}
		if len(is.Algorithms) == 0 {
			is.Algorithms = slices.Clone(DefaultOAuthAlgorithms)
		}
		if is.GroupsClaim == "" {
			is.GroupsClaim = DefaultOAuthGroupsClaim
		}
	}
}

// checkOAuthURL accepts an absolute https URL without fragment or
// credentials; http only for a loopback host (tests, a local IdP). Tokens
// and metadata fetched over plain http off-host could be swapped in transit.
func checkOAuthURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL: %w", s, ErrInvalid)
	case u.Host == "" || u.Fragment != "" || u.User != nil || u.RawQuery != "":
		return fmt.Errorf("%q: want an absolute URL without query, fragment or credentials: %w", s, ErrInvalid)
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		return nil
	}
	return fmt.Errorf("%q: want https (http only on a loopback host): %w", s, ErrInvalid)
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

func (c *Config) checkOAuth() error {
	o := c.Transports.HTTP.OAuth
	if o == nil {
		return nil
	}
	const base = "$.transports.http.oauth"
	if err := checkOAuthURL(o.Resource); err != nil {
		return c.at(base+".resource", err)
	}
	if len(o.Issuers) == 0 {
		return c.at(base, fmt.Errorf("no issuers: %w", ErrInvalid))
	}
	if len(o.RoleMapping) == 0 {
		return c.at(base, fmt.Errorf("no role_mapping: every token would be refused: %w", ErrInvalid))
	}
	if o.ClockSkewSeconds > MaxOAuthClockSkewSeconds {
		return c.at(base+".clock_skew_seconds", fmt.Errorf("%d is over %d: %w", o.ClockSkewSeconds, MaxOAuthClockSkewSeconds, ErrInvalid))
	}
	for i, sc := range o.ScopesSupported {
		if !validScope(sc) {
			return c.at(fmt.Sprintf("%s.scopes_supported[%d]", base, i), fmt.Errorf("scope %q: %w", sc, errBadScope))
		}
	}
	issuers := map[string]bool{}
	for i, is := range o.Issuers {
		p := fmt.Sprintf("%s.issuers[%d]", base, i)
		if err := checkOAuthURL(is.Issuer); err != nil {
			return c.at(p+".issuer", err)
		}
		if issuers[is.Issuer] {
			return c.at(p+".issuer", fmt.Errorf("duplicate issuer %q: %w", is.Issuer, ErrInvalid))
		}
		issuers[is.Issuer] = true
		if is.JWKSURI != "" {
			if err := checkOAuthURL(is.JWKSURI); err != nil {
				return c.at(p+".jwks_uri", err)
			}
		}
		for j, a := range is.Algorithms {
			if !slices.Contains(OAuthAlgorithms, a) {
				return c.at(fmt.Sprintf("%s.algorithms[%d]", p, j), fmt.Errorf("algorithm %q (want one of %v; none and HS* are never accepted): %w", a, OAuthAlgorithms, ErrInvalid))
			}
		}
		if in := is.Introspection; in != nil {
			if in.Endpoint != "" {
				if err := checkOAuthURL(in.Endpoint); err != nil {
					return c.at(p+".introspection.endpoint", err)
				}
			}
			if in.ClientID == "" || (in.ClientSecret.Env == "") == (in.ClientSecret.File == "") {
				return c.at(p+".introspection", fmt.Errorf("want client_id and exactly one of client_secret.env or client_secret.file: %w", ErrInvalid))
			}
		}
	}
	for i, rm := range o.RoleMapping {
		p := fmt.Sprintf("%s.role_mapping[%d]", base, i)
		if err := c.checkRole(rm.Role); err != nil {
			return c.at(p+".role", err)
		}
		if rm.Issuer != "" && !issuers[rm.Issuer] {
			return c.at(p+".issuer", fmt.Errorf("issuer %q is not in issuers: %w", rm.Issuer, ErrUnknownReference))
		}
		for j, sc := range rm.Scopes {
			if !validScope(sc) {
				return c.at(fmt.Sprintf("%s.scopes[%d]", p, j), fmt.Errorf("scope %q: %w", sc, errBadScope))
			}
		}
		if err := rm.checkContext(); err != nil {
			return c.at(p+".context", err)
		}
		// A rule without a condition would give its role to every token of
		// every issuer; say so explicitly with client_ids or subjects.
		if len(rm.Scopes)+len(rm.Groups)+len(rm.Subjects)+len(rm.ClientIDs) == 0 {
			return c.at(p, fmt.Errorf("a rule needs at least one of scopes, groups, subjects, client_ids: %w", ErrInvalid))
		}
	}
	return nil
}

var errBadScope = fmt.Errorf("want RFC 6749 scope characters (printable ASCII but space, quote and backslash): %w", ErrInvalid)

// validScope is RFC 6749's scope-token: %x21 / %x23-5B / %x5D-7E. Scopes
// are quoted into WWW-Authenticate headers, where a quote or space would
// let the configuration break the header's syntax.
func validScope(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
