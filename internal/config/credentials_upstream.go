package config

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// Brokered credentials for upstreams (issue 23 item 3): a credential's
// header may name HTTP upstreams and its env stdio upstreams (the
// credential's roles' calls carry it), and an HTTP upstream may get its
// Authorization by OAuth 2.0 Token Exchange of the caller's token.

// TokenExchange is an upstream's RFC 8693 exchange: Airlock, as the
// client ClientID, trades the calling agent's validated access token
// (subject_token) at TokenEndpoint for an access token with Audience (and
// Scope), sent to the upstream as "Authorization: Bearer …".
type TokenExchange struct {
	TokenEndpoint string      `json:"token_endpoint" jsonschema:"description=The authorization server's token endpoint (https; http only on loopback). Never discovered from a token."`
	ClientID      string      `json:"client_id" jsonschema:"minLength=1,description=Airlock's client id at the authorization server."`
	ClientSecret  TokenSource `json:"client_secret" jsonschema:"description=Airlock's client secret (env or file)\\, read at each exchange (client_secret_basic)."`
	Audience      string      `json:"audience" jsonschema:"minLength=1,description=The audience the exchanged token is for: this upstream."`
	Scope         string      `json:"scope,omitempty" jsonschema:"description=Scopes to ask for (space-separated); empty: the provider's default."`
}

// upstreamReservedEnv are a stdio upstream's variables Airlock sets (its
// egress proxy): a credential may not replace them.
func upstreamReservedEnv(name string) bool {
	switch name {
	case "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "ALL_PROXY":
		return true
	}
	return reservedEnv(name)
}

// checkUpstreamCredentials checks what reaches upstreams: each
// credential's upstreams exist and are of the right kind, no header or
// variable is set twice for one role's calls (or over the upstream's own
// headers and env), and each token exchange is complete.
func (c *Config) checkUpstreamCredentials() error {
	type slot struct{ upstream, role, name string }
	seen := map[slot]string{} // → credential id
	for i, cr := range c.Credentials {
		var ups []string
		var name, field string
		wantStdio := false
		switch {
		case cr.Header != nil && len(cr.Header.Upstreams) > 0:
			ups, name, field = cr.Header.Upstreams, strings.ToLower(cr.Header.Name), ".header.upstreams"
		case cr.Env != nil && len(cr.Env.Upstreams) > 0:
			ups, name, field, wantStdio = cr.Env.Upstreams, cr.Env.Name, ".env.upstreams", true
		}
		if cr.Header != nil && cr.Env != nil && len(cr.Header.Upstreams) > 0 && len(cr.Env.Upstreams) > 0 {
			return c.at(fmt.Sprintf("$.credentials[%d]", i), fmt.Errorf("a credential goes to HTTP upstreams (header) or stdio upstreams (env), not both: %w", ErrInvalid))
		}
		for j, id := range ups {
			at := fmt.Sprintf("$.credentials[%d]%s[%d]", i, field, j)
			up, ok := c.Upstream(id)
			if !ok {
				return c.at(at, fmt.Errorf("upstream %q: %w", id, ErrUnknownReference))
			}
			if up.Stdio() != wantStdio {
				return c.at(at, fmt.Errorf("upstream %q: a header goes to an HTTP (url) upstream, an env variable to a stdio (command) one: %w", id, ErrInvalid))
			}
			if wantStdio && upstreamReservedEnv(name) {
				return c.at(at, fmt.Errorf("%s is set by Airlock for every stdio upstream: %w", name, ErrInvalid))
			}
			if clash := ownSetting(up, name); clash || (!wantStdio && name == "authorization" && up.TokenExchange != nil) {
				return c.at(at, fmt.Errorf("upstream %q sets %s itself (headers, env or token_exchange): %w", id, name, ErrInvalid))
			}
			for _, role := range cr.Roles {
				k := slot{id, role, name}
				if other, dup := seen[k]; dup {
					return c.at(at, fmt.Errorf("credentials %s and %s both set %s on role %s's calls to upstream %q: %w", other, cr.ID, name, role, id, ErrInvalid))
				}
				seen[k] = cr.ID
			}
		}
	}
	for i, up := range c.Upstreams {
		if err := c.checkTokenExchange(up); err != nil {
			return c.at(fmt.Sprintf("$.upstreams[%d].token_exchange", i), err)
		}
	}
	return nil
}

// ownSetting reports whether up's own headers or env set name (a
// header name compared in lower case).
func ownSetting(up Upstream, name string) bool {
	if up.Stdio() {
		_, ok := up.Env[name]
		return ok
	}
	for h := range up.Headers {
		if strings.ToLower(h) == name {
			return true
		}
	}
	return false
}

// checkTokenExchange checks an upstream's token exchange: an HTTP
// upstream, an OAuth edge to take callers' tokens from, no Authorization
// of its own, and a token endpoint that is https (or loopback http).
func (c *Config) checkTokenExchange(up Upstream) error {
	te := up.TokenExchange
	if te == nil {
		return nil
	}
	switch {
	case up.Stdio():
		return fmt.Errorf("upstream %q: token_exchange is for url upstreams: %w", up.ID, ErrInvalid)
	case c.Transports.HTTP.OAuth == nil:
		return fmt.Errorf("upstream %q: token_exchange exchanges the caller's OAuth access token, so it needs transports.http.oauth: %w", up.ID, ErrInvalid)
	case ownSetting(up, "authorization"):
		return fmt.Errorf("upstream %q: token_exchange sets Authorization; headers may not: %w", up.ID, ErrInvalid)
	case te.ClientID == "" || te.Audience == "":
		return fmt.Errorf("upstream %q: client_id and audience are required: %w", up.ID, ErrInvalid)
	case strings.ContainsFunc(te.Scope+te.Audience+te.ClientID, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("upstream %q: control characters: %w", up.ID, ErrInvalid)
	}
	if err := te.ClientSecret.check(); err != nil {
		return fmt.Errorf("upstream %q: client_secret: %w", up.ID, err)
	}
	u, err := url.Parse(te.TokenEndpoint)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" || (u.Scheme != "https" && (u.Scheme != "http" || !loopbackHost(u.Hostname()))) {
		return fmt.Errorf("upstream %q: token_endpoint must be an absolute https URL (http only on loopback) without user info: %w", up.ID, ErrInvalid)
	}
	return nil
}

func loopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// ReachesUpstream reports whether a credential goes to upstream id
// (its header's or env's upstreams).
func (cr Credential) ReachesUpstream(id string) bool {
	return (cr.Header != nil && slices.Contains(cr.Header.Upstreams, id)) || (cr.Env != nil && slices.Contains(cr.Env.Upstreams, id))
}
