package config_test

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
)

// TestUpstreams: the upstreams section loads with its defaults, and every
// shape that could widen what an upstream reaches is refused with the
// YAML line — among them hosts a stdio upstream's egress could never
// reach safely (wildcards, URLs, private or loopback addresses).
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
	// A stdio upstream may name hosts: exact names, optional ports; a
	// loopback address only when comm.fetch.allow_private names it (the
	// tests' override).
	cfg, err = config.Parse("airlock.yaml", []byte(base+`upstreams:
  - {id: net, command: [node], hosts: [API.example.com, "files.example.com:8443", "203.0.114.9"]}
`), "/etc/airlock")
	if err != nil {
		t.Fatal(err)
	}
	u, _ = cfg.Upstream("net")
	if hs, err := u.EgressHosts(); err != nil || len(hs) != 3 || hs[0] != (config.UpstreamHost{Host: "api.example.com"}) ||
		hs[1] != (config.UpstreamHost{Host: "files.example.com", Port: 8443}) {
		t.Fatalf("hosts: %+v %v", hs, err)
	}
	if _, err := config.Parse("airlock.yaml", []byte(base+"comm:\n  fetch: {allow_private: [127.0.0.0/8]}\nupstreams:\n  - {id: x, command: [node], hosts: ['127.0.0.1:8080']}\n"), t.TempDir()); err != nil {
		t.Fatalf("loopback under allow_private: %v", err)
	}
	wantRefusals(t, "upstreams:\n", []refusal{
		{"wildcard host", "  - {id: x, command: [node], hosts: ['*.example.com']}\n", "no wildcard"},
		{"URL as host", "  - {id: x, command: [node], hosts: ['https://api.example.com/']}\n", "hosts entry"},
		{"bad port", "  - {id: x, command: [node], hosts: ['api.example.com:0443']}\n", "port"},
		{"loopback host", "  - {id: x, command: [node], hosts: ['127.0.0.1:8080']}\n", "private, loopback"},
		{"localhost", "  - {id: x, command: [node], hosts: [localhost]}\n", "private, loopback"},
		{"metadata address", "  - {id: x, command: [node], hosts: [169.254.169.254]}\n", "private, loopback"},
		{"private v6", "  - {id: x, command: [node], hosts: ['[fd00::1]:443']}\n", "private, loopback"},
		{"numeric host", "  - {id: x, command: [node], hosts: ['2130706433']}\n", "no wildcard"},
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
	})
}
