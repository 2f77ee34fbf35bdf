package config_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
)

// upstreamCredBase has an HTTP upstream (web, with a header of its own), a
// stdio one (tool, with a variable of its own) and an OAuth edge.
const upstreamCredBase = base + `upstreams:
  - {id: web, url: "https://mcp.example/mcp", headers: {X-Own: {env: OWN}}}
  - {id: tool, command: [/bin/true], env: {OWN_VAR: {env: OWN}}}
transports:
  http:
    oauth: ` + oauthOK + `
`

// TestUpstreamCredentialsConfig (issue 23 item 3): a credential may go to
// HTTP upstreams as a header and to stdio upstreams as a variable, and an
// HTTP upstream may exchange the caller's token; every misuse is refused
// with the node named.
func TestUpstreamCredentialsConfig(t *testing.T) {
	dir := t.TempDir()
	const te = `{token_endpoint: "https://idp.example/token", client_id: airlock, client_secret: {file: s/te}, audience: "https://mcp.example", scope: "mcp.read"}`
	ok := strings.Replace(upstreamCredBase, `headers: {X-Own: {env: OWN}}}`, `headers: {X-Own: {env: OWN}}, token_exchange: `+te+`}`, 1) + `credentials:
  - {id: web-key, secret: {env: K}, roles: [local], header: {name: X-Api-Key, upstreams: [web]}}
  - {id: tool-key, secret: {file: s/k}, roles: [local], env: {name: TOOL_TOKEN, upstreams: [tool]}}
`
	cfg, err := config.Parse("x.yaml", []byte(ok), dir)
	if err != nil {
		t.Fatal(err)
	}
	if up, _ := cfg.Upstream("web"); up.TokenExchange == nil || up.TokenExchange.ClientSecret.File != filepath.Join(dir, "s/te") {
		t.Errorf("token exchange: %+v", up.TokenExchange)
	}
	if !cfg.Credentials[0].ReachesUpstream("web") || cfg.Credentials[0].ReachesUpstream("tool") || !cfg.Credentials[1].ReachesUpstream("tool") {
		t.Error("ReachesUpstream")
	}
	for _, tc := range []struct{ name, section, node string }{
		{"unknown upstream", `credentials:
  - {id: a, secret: {env: X}, roles: [local], header: {name: X-K, upstreams: [nope]}}`, ".header.upstreams[0]"},
		{"header to stdio", `credentials:
  - {id: a, secret: {env: X}, roles: [local], header: {name: X-K, upstreams: [tool]}}`, ".header.upstreams[0]"},
		{"env to HTTP", `credentials:
  - {id: a, secret: {env: X}, roles: [local], env: {name: K, upstreams: [web]}}`, ".env.upstreams[0]"},
		{"proxy variable", `credentials:
  - {id: a, secret: {env: X}, roles: [local], env: {name: HTTPS_PROXY, upstreams: [tool]}}`, ".env.upstreams[0]"},
		{"the upstream's own variable", `credentials:
  - {id: a, secret: {env: X}, roles: [local], env: {name: OWN_VAR, upstreams: [tool]}}`, ".env.upstreams[0]"},
		{"the upstream's own header", `credentials:
  - {id: a, secret: {env: X}, roles: [local], header: {name: x-own, upstreams: [web]}}`, ".header.upstreams[0]"},
		{"one header twice for a role", `credentials:
  - {id: a, secret: {env: X}, roles: [local], header: {name: X-K, upstreams: [web]}}
  - {id: b, secret: {env: Y}, roles: [local], header: {name: x-k, upstreams: [web]}}`, "credentials[1].header.upstreams[0]"},
		{"both kinds", `credentials:
  - {id: a, secret: {env: X}, roles: [local], header: {name: X-K, upstreams: [web]}, env: {name: K, upstreams: [tool]}}`, "credentials[0]"},
		{"neither hosts nor upstreams", `credentials:
  - {id: a, secret: {env: X}, roles: [local], header: {name: X-K}}`, ".header.hosts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("x.yaml", []byte(upstreamCredBase+tc.section+"\n"), dir)
			if err == nil || !(errors.Is(err, config.ErrInvalid) || errors.Is(err, config.ErrUnknownReference)) || !strings.Contains(err.Error(), tc.node) {
				t.Errorf("err = %v, want one naming %s", err, tc.node)
			}
		})
	}
	for _, tc := range []struct{ name, from, to, says string }{
		{"on stdio", `env: {OWN_VAR: {env: OWN}}}`, `env: {OWN_VAR: {env: OWN}}, token_exchange: ` + te + `}`, "for url upstreams"},
		{"no OAuth edge", "transports:\n  http:\n    oauth: " + oauthOK, "transports: {}", "needs transports.http.oauth"},
		{"own Authorization", `headers: {X-Own: {env: OWN}}}`, `headers: {Authorization: {env: OWN}}, token_exchange: ` + te + `}`, "sets Authorization"},
		{"plain http off loopback", `headers: {X-Own: {env: OWN}}}`, `token_exchange: ` + strings.Replace(te, "https://idp", "http://idp", 1) + `}`, "https"},
		{"user info", `headers: {X-Own: {env: OWN}}}`, `token_exchange: ` + strings.Replace(te, "https://idp", "https://u:p@idp", 1) + `}`, "https"},
		{"no audience", `headers: {X-Own: {env: OWN}}}`, `token_exchange: ` + strings.Replace(te, `audience: "https://mcp.example", `, "", 1) + `}`, "audience"},
		{"no secret", `headers: {X-Own: {env: OWN}}}`, `token_exchange: ` + strings.Replace(te, `client_secret: {file: s/te}, `, "", 1) + `}`, "client_secret"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(upstreamCredBase, tc.from, tc.to, 1)
			if tc.name == "no OAuth edge" {
				src = strings.Replace(src, `headers: {X-Own: {env: OWN}}}`, `token_exchange: `+te+`}`, 1)
			}
			_, err := config.Parse("x.yaml", []byte(src), dir)
			if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("err = %v, want ErrInvalid saying %q", err, tc.says)
			}
		})
	}
	loopback := strings.Replace(upstreamCredBase, `headers: {X-Own: {env: OWN}}}`, `token_exchange: `+strings.Replace(te, "https://idp.example", "http://127.0.0.1:9", 1)+`}`, 1)
	if _, err := config.Parse("x.yaml", []byte(loopback), dir); err != nil {
		t.Errorf("http token endpoint on loopback: %v", err)
	}
}
