package oauth

import (
	"net/url"
	"strings"

	"github.com/airlock-dev/airlock/internal/config"
)

// WellKnownPath is where RFC 9728 puts protected resource metadata; a
// resource with a path (/mcp) has it at this path plus its own.
const WellKnownPath = "/.well-known/oauth-protected-resource"

// Metadata is the protected resource metadata document (RFC 9728 section 2).
type Metadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// NewMetadata builds the document from the configuration. The resource is
// the configured URI, never one derived from the request's Host header:
// a forged Host must not make Airlock advertise another resource (and so
// steer a client's token request).
func NewMetadata(cfg *config.OAuth) Metadata {
	return Metadata{Resource: cfg.Resource, AuthorizationServers: cfg.AuthorizationServers,
		ScopesSupported: cfg.ScopesSupported, BearerMethodsSupported: []string{"header"}, ResourceName: cfg.ResourceName}
}

// MetadataURL is where a client finds the metadata of resource: the
// well-known path inserted between its origin and its path (RFC 9728
// section 3.1), e.g. https://a.example/.well-known/oauth-protected-resource/mcp.
func MetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + WellKnownPath + strings.TrimSuffix(u.EscapedPath(), "/")
}

// MetadataPaths are the request paths the metadata is served at: the
// path-suffixed form for the resource and the bare form.
func MetadataPaths(resource string) []string {
	u, err := url.Parse(resource)
	if err != nil {
		return []string{WellKnownPath}
	}
	paths := []string{WellKnownPath}
	if p := strings.TrimSuffix(u.EscapedPath(), "/"); p != "" {
		paths = append(paths, WellKnownPath+p)
	}
	return paths
}

// Challenge is the WWW-Authenticate value of a 401 (RFC 6750 section 3,
// RFC 9728 section 5.1): where the metadata is, the scopes to ask for,
// and error="invalid_token" when a token was presented and refused.
func Challenge(cfg *config.OAuth, presented bool) string {
	var b strings.Builder
	b.WriteString(`Bearer resource_metadata="` + MetadataURL(cfg.Resource) + `"`)
	if len(cfg.ScopesSupported) > 0 {
		b.WriteString(`, scope="` + strings.Join(cfg.ScopesSupported, " ") + `"`)
	}
	if presented {
		b.WriteString(`, error="invalid_token"`)
	}
	return b.String()
}

// InsufficientScope is the WWW-Authenticate value of a 403 for a valid
// token that maps to no role (RFC 6750 section 3.1; MCP authorization,
// scope challenge handling).
func InsufficientScope(cfg *config.OAuth, scope string) string {
	s := `Bearer error="insufficient_scope"`
	if scope != "" {
		s += `, scope="` + scope + `"`
	}
	return s + `, resource_metadata="` + MetadataURL(cfg.Resource) + `"`
}
