package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/policy/policy"
)

// goodConfig is a config whose pool, manifest and pipeline program exist.
const goodConfig = `pools:
  - {id: sales, description: s, path: pools/sales}
policies:
  base:
    allow: [pool.*, comm.fetch, pipeline.run:count]
    deny: [pipeline.run:danger_*]
    rules:
      - {id: r, capability: comm.fetch, when: 'url.host == "a.example"', effect: require_approval}
roles:
  local: {policy: base, pools: [sales]}
pipelines:
  - name: count
    description: c
    argv: [/bin/true]
    outputs: [x.txt]
  - name: named
    description: a bare name on PATH
    argv: ["true"]
    outputs: [x.txt]
upstreams:
  - id: up
    command: [/bin/true, serve]
    read_only: [/bin]
`

// TestConfigCheckRefusesWithLine: config check refuses, with file:line and
// a "did you mean" where one is close, what used to pass check and fail
// only at serve time (issue 10 item 14).
func TestConfigCheckRefusesWithLine(t *testing.T) {
	tests := []struct {
		name       string
		edit       func(string) string
		prep       func(dir string)
		line, want string
		err        error
	}{
		{"ok", func(s string) string { return s }, nil, "", "OK", nil},
		{"misspelt capability", func(s string) string { return strings.Replace(s, "comm.fetch,", "comm.fecth,", 1) },
			nil, "airlock.yaml:5", `did you mean "comm.fetch"`, policy.ErrUnknownCapability},
		{"misspelt rule capability", func(s string) string { return strings.Replace(s, "capability: comm.fetch", "capability: pool.raed", 1) },
			nil, "airlock.yaml:8", `did you mean "pool.read"`, policy.ErrUnknownCapability},
		{"undeclared pipeline", func(s string) string { return strings.Replace(s, "pipeline.run:count]", "pipeline.run:cuont]", 1) },
			nil, "airlock.yaml:5", `did you mean "pipeline.run:count"`, policy.ErrUnknownCapability},
		{"missing pool directory", func(s string) string { return strings.Replace(s, "pools/sales", "pools/sale", 1) },
			nil, "airlock.yaml:2", "did you mean", config.ErrMissing},
		{"missing manifest", func(s string) string { return s },
			func(dir string) { os.Remove(filepath.Join(dir, "pools", "sales", "SHA256SUMS")) }, "airlock.yaml:2", "manifest", config.ErrMissing},
		{"missing program", func(s string) string { return strings.Replace(s, "/bin/true", "/bin/truee", 1) },
			nil, "airlock.yaml:14", "did you mean /bin/true", config.ErrMissing},
		{"bare name not on PATH", func(s string) string { return strings.Replace(s, `["true"]`, `["no-such-program-x"]`, 1) },
			nil, "airlock.yaml:18", "not found on PATH", config.ErrMissing},
		// Issue 24 item 6: an upstream's program and read_only paths too.
		{"missing upstream program", func(s string) string {
			return strings.Replace(s, "[/bin/true, serve]", "[/bin/no-such-upstream, serve]", 1)
		},
			nil, "airlock.yaml:22", `upstream "up" program: /bin/no-such-upstream does not exist`, config.ErrMissing},
		{"upstream bare name not on PATH", func(s string) string { return strings.Replace(s, "[/bin/true, serve]", "[no-such-upstream-x]", 1) },
			nil, "airlock.yaml:22", "not found on PATH", config.ErrMissing},
		{"missing upstream read_only path", func(s string) string { return strings.Replace(s, "[/bin]", "[/no/such/dir]", 1) },
			nil, "airlock.yaml:23", `upstream "up" read_only path: /no/such/dir does not exist`, config.ErrMissing},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			must(t, os.MkdirAll(filepath.Join(dir, "pools", "sales"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "pools", "sales", "SHA256SUMS"), nil, 0o644))
			if tc.prep != nil {
				tc.prep(dir)
			}
			f := filepath.Join(dir, "airlock.yaml")
			must(t, os.WriteFile(f, []byte(tc.edit(goodConfig)), 0o644))
			out, err := run(t, "config", "check", f)
			if tc.err == nil {
				if err != nil || !strings.Contains(out, tc.want) {
					t.Fatalf("err %v, out %s", err, out)
				}
				return
			}
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			if !strings.Contains(err.Error(), tc.line) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q lacks %q or %q", err, tc.line, tc.want)
			}
		})
	}
}

// TestPolicyCheckRefusesMisspeltCapability: policy check refuses a pattern
// that matches no capability, with file:line and a suggestion; any
// pipeline name is fine on its own (no config to declare pipelines).
func TestPolicyCheckRefusesMisspeltCapability(t *testing.T) {
	f := filepath.Join(t.TempDir(), "p.yaml")
	must(t, os.WriteFile(f, []byte("policies:\n  base:\n    allow: [pool.*, pipeline.run:anything, 'pipe*']\n    deny:\n      - comm.fecth\n"), 0o644))
	_, err := run(t, "policy", "check", f)
	if !errors.Is(err, policy.ErrUnknownCapability) || !strings.Contains(err.Error(), "p.yaml:5") || !strings.Contains(err.Error(), `did you mean "comm.fetch"`) {
		t.Fatalf("got %v", err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCheckFlagsUnreachableRule (issue 24 item 7): a require_approval rule
// on a capability nothing allows can never fire — its calls are denied by
// default before rules are judged — so policy check and config check
// refuse it with file:line, and policy test --coverage lists it as never
// able to fire (never as covered), failing --require-coverage even when a
// case expects the deny it really gets.
func TestCheckFlagsUnreachableRule(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "airlock.yaml")
	must(t, os.WriteFile(f, []byte(`pools: []
policies:
  base:
    allow: [pool.*]
    rules:
      - id: fetch-needs-ok
        capability: comm.fetch
        effect: require_approval
roles:
  local: {policy: base}
`), 0o644))
	cases := filepath.Join(dir, "cases.yaml")
	must(t, os.WriteFile(cases, []byte(`policy: base
cases:
  - {name: fetch, call: {capability: comm.fetch, phase: execution}, expect: deny}
  - {name: read, call: {capability: pool.read}, expect: allow}
`), 0o644))
	for _, cmd := range [][]string{{"policy", "check", f}, {"config", "check", f}} {
		_, err := run(t, cmd...)
		if !errors.Is(err, policy.ErrUnreachableRule) || !strings.Contains(err.Error(), "airlock.yaml:7") ||
			!strings.Contains(err.Error(), `rule "fetch-needs-ok": no allow pattern or allow rule of policy "base" allows comm.fetch`) {
			t.Errorf("%s: %v", strings.Join(cmd[:2], " "), err)
		}
	}
	out, err := run(t, "policy", "test", f, cases, "--require-coverage")
	if !errors.Is(err, ErrFailed) || !strings.Contains(out, "never hit: base/fetch-needs-ok (rule): can never fire: ") {
		t.Fatalf("coverage: %v\n%s", err, out)
	}
}
