package config_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
)

const credBase = base + `pipelines:
  - {name: p1, description: d, argv: [/bin/true], outputs: [x], env: {MODE: fast}}
credentials:
`

// TestCredentialsConfig: a valid section loads (relative secret file
// resolved, host normalised, default template); every malformed one is
// refused with the YAML node named.
func TestCredentialsConfig(t *testing.T) {
	dir := t.TempDir()
	ok := credBase + `  - {id: api, secret: {file: s/api}, roles: [local], header: {name: Authorization, hosts: ["API.Example:443"]}, env: {name: API_TOKEN, pipelines: [p1]}}
`
	cfg, err := config.Parse("x.yaml", []byte(ok), dir)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Credentials[0]
	if c.Secret.File != filepath.Join(dir, "s/api") || c.Header.Hosts[0] != "api.example" || c.Header.Value != "{secret}" {
		t.Errorf("resolved: %+v %+v", c.Secret, c.Header)
	}
	for _, tc := range []struct{ name, item, node string }{
		{"bad id", `{id: "A B", secret: {env: X}, roles: [local], env: {name: T, pipelines: [p1]}}`, ".id"},
		{"two sources", `{id: a, secret: {env: X, file: f}, roles: [local], env: {name: T, pipelines: [p1]}}`, ".secret"},
		{"no source", `{id: a, secret: {}, roles: [local], env: {name: T, pipelines: [p1]}}`, ".secret"},
		{"unknown role", `{id: a, secret: {env: X}, roles: [nobody], env: {name: T, pipelines: [p1]}}`, ".roles[0]"},
		{"no roles", `{id: a, secret: {env: X}, roles: [], env: {name: T, pipelines: [p1]}}`, ".roles"},
		{"unused", `{id: a, secret: {env: X}, roles: [local]}`, "credentials[0]"},
		{"Host header", `{id: a, secret: {env: X}, roles: [local], header: {name: Host, hosts: [a.example]}}`, ".header.name"},
		{"CRLF name", `{id: a, secret: {env: X}, roles: [local], header: {name: "X\r\nY", hosts: [a.example]}}`, ".header.name"},
		{"no placeholder", `{id: a, secret: {env: X}, roles: [local], header: {name: Authorization, value: "Bearer", hosts: [a.example]}}`, ".header.value"},
		{"two placeholders", `{id: a, secret: {env: X}, roles: [local], header: {name: Authorization, value: "{secret}{secret}", hosts: [a.example]}}`, ".header.value"},
		{"wildcard host", `{id: a, secret: {env: X}, roles: [local], header: {name: Authorization, hosts: ["*.example"]}}`, ".header.hosts[0]"},
		{"host with path", `{id: a, secret: {env: X}, roles: [local], header: {name: Authorization, hosts: ["a.example/x"]}}`, ".header.hosts[0]"},
		{"no hosts", `{id: a, secret: {env: X}, roles: [local], header: {name: Authorization, hosts: []}}`, ".header.hosts"},
		{"reserved env", `{id: a, secret: {env: X}, roles: [local], env: {name: AIRLOCK_OUT, pipelines: [p1]}}`, ".env.name"},
		{"PATH", `{id: a, secret: {env: X}, roles: [local], env: {name: PATH, pipelines: [p1]}}`, ".env.name"},
		{"lower env", `{id: a, secret: {env: X}, roles: [local], env: {name: token, pipelines: [p1]}}`, ".env.name"},
		{"unknown pipeline", `{id: a, secret: {env: X}, roles: [local], env: {name: T, pipelines: [p9]}}`, ".env.pipelines[0]"},
		{"clash with pipeline env", `{id: a, secret: {env: X}, roles: [local], env: {name: MODE, pipelines: [p1]}}`, ".env.pipelines[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := credBase + "  - " + tc.item + "\n"
			_, err := config.Parse("x.yaml", []byte(src), dir)
			if err == nil || !(errors.Is(err, config.ErrInvalid) || errors.Is(err, config.ErrUnknownReference)) || !strings.Contains(err.Error(), tc.node) {
				t.Errorf("err = %v, want one naming %s", err, tc.node)
			}
		})
	}
	dup := credBase + "  - {id: a, secret: {env: X}, roles: [local], env: {name: T, pipelines: [p1]}}\n  - {id: a, secret: {env: Y}, roles: [local], env: {name: U, pipelines: [p1]}}\n"
	if _, err := config.Parse("x.yaml", []byte(dup), dir); !errors.Is(err, config.ErrInvalid) {
		t.Errorf("duplicate id: %v", err)
	}
}

// TestTracingConfig: the tracing section's endpoint, ratio and headers
// are checked; relative header files resolve against the config file.
func TestTracingConfig(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse("x.yaml", []byte(base+"tracing: {enabled: true, endpoint: \"http://c:4318/v1/traces\", sample_ratio: 0.25, headers: {Authorization: {file: tok}}}\n"), dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Tracing.Headers["Authorization"].File != filepath.Join(dir, "tok") || *cfg.Tracing.SampleRatio != 0.25 {
		t.Errorf("tracing: %+v", cfg.Tracing)
	}
	for _, bad := range []string{
		"tracing: {endpoint: \"ftp://c/x\"}",
		"tracing: {endpoint: \"http://user:pw-zz9@c:4318\"}",
		"tracing: {sample_ratio: 1.5}",
		"tracing: {headers: {Authorization: {env: A, file: b}}}",
		"tracing: {headers: {\"Bad Header\": {env: A}}}",
	} {
		if _, err := config.Parse("x.yaml", []byte(base+bad+"\n"), dir); err == nil || !strings.Contains(err.Error(), "tracing") || strings.Contains(err.Error(), "pw-zz9") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
