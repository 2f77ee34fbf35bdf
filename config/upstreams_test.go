package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/config"
)

// TestUpstreams: the upstreams section loads with its defaults, and every
// shape that could widen what an upstream reaches is refused with the
// YAML line — above all a stdio upstream naming hosts (the sandbox has no
// egress for upstreams yet; never a silently opened network).
func TestUpstreams(t *testing.T) {
	ok := base + `upstreams:
  - id: everything
    command: [node, /opt/everything/dist/index.js, stdio]
    read_only: [/opt/everything]
    env: {API_KEY: {env: EVERYTHING_KEY}}
  - id: remote
    url: https://mcp.example.com/mcp
    headers: {Authorization: {file: token.txt}}
`
	cfg, err := config.Parse("airlock.yaml", []byte(ok), "/etc/airlock")
	if err != nil {
		t.Fatal(err)
	}
	u, found := cfg.Upstream("remote")
	if !found || u.Stdio() || u.Trust != "untrusted" || u.TimeoutMS != config.DefaultUpstreamTimeoutMS ||
		u.MaxResultBytes != config.DefaultUpstreamMaxResultBytes || u.Headers["Authorization"].File != "/etc/airlock/token.txt" {
		t.Fatalf("remote: %+v", u)
	}
	for _, tc := range []struct{ name, src, want string }{
		{"stdio with hosts", "  - {id: x, command: [node], hosts: [api.example.com]}\n", "egress for sandboxed upstreams is not supported"},
		{"both", "  - {id: x, command: [node], url: https://a.example}\n", "exactly one of command"},
		{"neither", "  - {id: x}\n", "exactly one of command"},
		{"id with a dot", "  - {id: a.b, url: https://a.example}\n", "upstream id"},
		{"duplicate", "  - {id: x, url: https://a.example}\n  - {id: x, url: https://b.example}\n", "duplicate upstream"},
		{"user info", "  - {id: x, url: 'https://u:p@a.example'}\n", "without user info"},
		{"file url", "  - {id: x, url: 'file:///etc/passwd'}\n", "http(s)"},
		{"trusted", "  - {id: x, url: https://a.example, trust: trusted}\n", "only untrusted"},
		{"env on http", "  - {id: x, url: https://a.example, env: {A: {env: B}}}\n", "for command upstreams"},
		{"headers on stdio", "  - {id: x, command: [node], headers: {A: {env: B}}}\n", "headers are for url"},
		{"token source both", "  - {id: x, command: [node], env: {A: {env: B, file: c}}}\n", "exactly one of env or file"},
		{"bad env name", "  - {id: x, command: [node], env: {'A=B': {env: B}}}\n", "environment variable name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("airlock.yaml", []byte(base+"upstreams:\n"+tc.src), t.TempDir())
			if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "airlock.yaml:") {
				t.Fatalf("%v, want ErrInvalid with %q and a line", err, tc.want)
			}
		})
	}
}
