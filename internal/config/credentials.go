package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/urlnorm"
)

// Credential is one secret the server holds for its roles and injects
// only at the boundary (package credentials, issue 12 item 7): as an HTTP
// header on comm.fetch requests to named hosts or on the connection to
// named HTTP upstreams, and/or as an environment variable of named
// pipelines or stdio upstreams (issue 23 item 3, credentials_upstream.go).
// The agent never sees it.
type Credential struct {
	ID     string            `json:"id" jsonschema:"pattern=^[a-z0-9][a-z0-9_.-]{0\\,63}$,description=Name of the credential in audit records and redaction markers ([REDACTED:credential:ID]); never the secret."`
	Secret TokenSource       `json:"secret" jsonschema:"description=Where the secret is read from at each use (env or file). A file that is removed or emptied revokes the credential without a restart."`
	Roles  []string          `json:"roles" jsonschema:"minItems=1,description=Roles whose calls may use it; other roles' calls never carry it."`
	Header *CredentialHeader `json:"header,omitempty" jsonschema:"description=Send it as an HTTP header on comm.fetch requests to these hosts and/or on the connection to these HTTP upstreams."`
	Env    *CredentialEnv    `json:"env,omitempty" jsonschema:"description=Give it to these pipelines and/or stdio upstreams as an environment variable."`
}

// CredentialHeader injects a credential into comm.fetch requests.
type CredentialHeader struct {
	Name  string   `json:"name" jsonschema:"description=Header name (e.g. Authorization)."`
	Value string   `json:"value,omitempty" jsonschema:"description=Header value template; {secret} is replaced by the secret (default {secret}\\, e.g. Bearer {secret})."`
	Hosts []string `json:"hosts,omitempty" jsonschema:"description=Hosts (host or host:port) that receive it\\, matched exactly after normalisation; a redirect to any other host is sent without it."`
	// Upstreams are HTTP upstreams (ids) whose connection carries it.
	Upstreams []string `json:"upstreams,omitempty" jsonschema:"description=HTTP upstreams (ids) whose connection carries it on calls of the credential's roles (hosts\\, upstreams or both)."`
}

// CredentialEnv injects a credential into pipeline runs.
type CredentialEnv struct {
	Name      string   `json:"name" jsonschema:"pattern=^[A-Z_][A-Z0-9_]{0\\,63}$,description=Environment variable name."`
	Pipelines []string `json:"pipelines,omitempty" jsonschema:"description=Pipelines that receive it."`
	// Upstreams are stdio upstreams (ids) whose process gets it.
	Upstreams []string `json:"upstreams,omitempty" jsonschema:"description=Stdio upstreams (ids) whose sandboxed process gets it on calls of the credential's roles (pipelines\\, upstreams or both)."`
}

// SecretPlaceholder is replaced by the secret in a header value template.
const SecretPlaceholder = "{secret}"

// envNameRE and headerNameRE bound the names a config may set: a POSIX
// portable environment name, an RFC 9110 header token.
var (
	envNameRE    = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,63}$`)
	headerNameRE = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$")
)

// reservedEnv are variables the server sets for every run: a credential
// may not replace them (a pipeline's AIRLOCK_OUT must stay /out).
func reservedEnv(name string) bool {
	switch name {
	case "PATH", "HOME", "LANG", "TMPDIR":
		return true
	}
	return strings.HasPrefix(name, "AIRLOCK_")
}

// forbiddenHeaders are headers a credential may not set: they steer the
// request itself (framing, target, cookies), not authentication.
var forbiddenHeaders = []string{"host", "content-length", "transfer-encoding", "connection", "cookie", "user-agent", "accept", "accept-encoding", "te", "upgrade", "proxy-authorization"}

// CredentialHost is the normal form of a host a credential names (the
// form comm.fetch matches a request's host against).
func CredentialHost(h string) (string, error) {
	n, err := urlnorm.Normalize("https://" + strings.TrimSpace(h) + "/")
	if err != nil {
		return "", err
	}
	u, err := url.Parse(n)
	if err != nil || u.Host == "" || u.Host != strings.ToLower(strings.TrimSpace(h)) && u.Host+":443" != strings.ToLower(strings.TrimSpace(h)) {
		return "", fmt.Errorf("%q is not a host or host:port: %w", h, ErrInvalid)
	}
	return u.Host, nil
}

// resolveCredentialPaths makes secret files absolute (relative to the
// config file) and hosts normal.
func (c *Config) resolveCredentialPaths() {
	for i := range c.Upstreams {
		if te := c.Upstreams[i].TokenExchange; te != nil {
			te.ClientSecret.File = c.rel(te.ClientSecret.File)
		}
	}
	for i := range c.Credentials {
		c.Credentials[i].Secret.File = c.rel(c.Credentials[i].Secret.File)
		if h := c.Credentials[i].Header; h != nil {
			if h.Value == "" {
				h.Value = SecretPlaceholder
			}
			for j, host := range h.Hosts {
				if n, err := CredentialHost(host); err == nil {
					h.Hosts[j] = n
				}
			}
		}
	}
}

// checkCredentials validates the credentials section.
func (c *Config) checkCredentials() error {
	seen := map[string]bool{}
	for i, cr := range c.Credentials {
		at := c.itemAt("$.credentials", i)
		if err := checkName(seen, nameRE, "id", cr.ID); err != nil {
			return at(".id", err)
		}
		if (cr.Secret.Env == "") == (cr.Secret.File == "") {
			return at(".secret", fmt.Errorf("exactly one of env and file: %w", ErrInvalid))
		}
		if len(cr.Roles) == 0 {
			return at(".roles", fmt.Errorf("at least one role: %w", ErrInvalid))
		}
		for j, r := range cr.Roles {
			if err := c.checkRole(r); err != nil {
				return at(fmt.Sprintf(".roles[%d]", j), err)
			}
		}
		if cr.Header == nil && cr.Env == nil {
			return at("", fmt.Errorf("a credential needs a header, an env or both, else it is never used: %w", ErrInvalid))
		}
		if err := c.checkCredentialHeader(cr.Header, at); err != nil {
			return err
		}
		if err := c.checkCredentialEnv(cr.Env, at); err != nil {
			return err
		}
	}
	return c.checkUpstreamCredentials()
}

func (c *Config) checkCredentialHeader(h *CredentialHeader, at func(string, error) error) error {
	if h == nil {
		return nil
	}
	if !headerNameRE.MatchString(h.Name) || slices.Contains(forbiddenHeaders, strings.ToLower(h.Name)) {
		return at(".header.name", fmt.Errorf("%q is not a header a credential may set: %w", h.Name, ErrInvalid))
	}
	if strings.Count(h.Value, SecretPlaceholder) != 1 || strings.ContainsFunc(h.Value, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return at(".header.value", fmt.Errorf("the template must hold %s exactly once and no control characters: %w", SecretPlaceholder, ErrInvalid))
	}
	if len(h.Hosts) == 0 && len(h.Upstreams) == 0 {
		return at(".header.hosts", fmt.Errorf("at least one host or upstream: %w", ErrInvalid))
	}
	for j, host := range h.Hosts {
		if _, err := CredentialHost(host); err != nil || strings.ContainsAny(host, "*/@") {
			return at(fmt.Sprintf(".header.hosts[%d]", j), fmt.Errorf("%q is not an exact host (no wildcard, path or user): %w", host, ErrInvalid))
		}
	}
	return nil
}

func (c *Config) checkCredentialEnv(e *CredentialEnv, at func(string, error) error) error {
	if e == nil {
		return nil
	}
	if !envNameRE.MatchString(e.Name) || reservedEnv(e.Name) {
		return at(".env.name", fmt.Errorf("%q is not a variable a credential may set: %w", e.Name, ErrInvalid))
	}
	if len(e.Pipelines) == 0 && len(e.Upstreams) == 0 {
		return at(".env.pipelines", fmt.Errorf("at least one pipeline or upstream: %w", ErrInvalid))
	}
	for j, p := range e.Pipelines {
		pl, ok := c.Pipeline(p)
		if !ok {
			return at(fmt.Sprintf(".env.pipelines[%d]", j), fmt.Errorf("pipeline %q: %w", p, ErrUnknownReference))
		}
		if _, clash := pl.Env[e.Name]; clash {
			return at(fmt.Sprintf(".env.pipelines[%d]", j), fmt.Errorf("pipeline %q sets %s itself: %w", p, e.Name, ErrInvalid))
		}
	}
	return nil
}
