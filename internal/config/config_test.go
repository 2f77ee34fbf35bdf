package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/kit/yamlfile"
)

const base = `pools:
  - {id: a, description: pool a, path: pa}
policies:
  base: {allow: ["pool.*"]}
roles:
  local: {policy: base, pools: [a]}
`

// refusal is a section entry config.Parse must refuse.
type refusal struct{ name, src, want string }

// wantRefusals parses base plus section plus each refusal's entry, and
// wants ErrInvalid with the refusal's text and the file's line.
func wantRefusals(t *testing.T, section string, tests []refusal) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("airlock.yaml", []byte(base+section+tc.src), t.TempDir())
			if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "airlock.yaml:") {
				t.Fatalf("%v, want ErrInvalid with %q and a line", err, tc.want)
			}
		})
	}
}

// TestReadPageDefaultsWithinOutput: without max_read_bytes, a page is the
// default size or max_output_bytes, whichever is smaller.
func TestReadPageDefaultsWithinOutput(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int64
	}{
		{base, config.DefaultMaxReadBytes},
		{"server: {max_output_bytes: 1000}\n" + base, 1000},
		{"server: {max_output_bytes: 1000, max_read_bytes: 1000}\n" + base, 1000},
	} {
		cfg, err := config.Parse("airlock.yaml", []byte(tc.src), t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Server.MaxReadBytes != tc.want {
			t.Errorf("max_read_bytes = %d, want %d", cfg.Server.MaxReadBytes, tc.want)
		}
	}
}

// TestClientSafeOutput: the largest accepted max_output_bytes still fits
// one worst-case answer in a client's message buffer, and the defaults are
// within it; the default file limit reads files of 1 GiB.
func TestClientSafeOutput(t *testing.T) {
	if config.MaxOutputBytes*18+64<<10 > config.ClientMessageBytes || config.DefaultMaxOutputBytes > config.MaxOutputBytes {
		t.Fatalf("bound %d (default %d) does not fit %d", config.MaxOutputBytes, config.DefaultMaxOutputBytes, config.ClientMessageBytes)
	}
	src := fmt.Sprintf("server: {max_output_bytes: %d, max_read_bytes: %d}\n", config.MaxOutputBytes, config.MaxOutputBytes) + base
	if _, err := config.Parse("airlock.yaml", []byte(src), t.TempDir()); err != nil {
		t.Fatalf("at the bound: %v", err)
	}
	cfg, err := config.Parse("airlock.yaml", []byte(base), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.MaxFileBytes < 1<<30 {
		t.Fatalf("default max_file_bytes %d, want at least 1 GiB", cfg.Server.MaxFileBytes)
	}
}

func TestParseRefusesWithLine(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		want      error
	}{
		{"unknown top-level key", base + "colour: red\n", 7, nil},
		{"unknown role key", strings.Replace(base, "pools: [a]}", "pools: [a], admin: true}", 1), 6, nil},
		{"role names missing policy", strings.Replace(base, "policy: base", "policy: nope", 1), 6, config.ErrUnknownReference},
		{"role names missing pool", strings.Replace(base, "pools: [a]}", "pools: [a, b]}", 1), 6, config.ErrUnknownReference},
		{"bad phase", strings.Replace(base, "pools: [a]}", "pools: [a], initial_phase: review}", 1), 6, config.ErrInvalid},
		{"token with both sources", strings.Replace(base, "pools: [a]}", "pools: [a], tokens: [{env: X, file: y}]}", 1), 6, config.ErrInvalid},
		{"token bound to a non-id", strings.Replace(base, "pools: [a]}", "pools: [a], tokens: [{env: X, context: ctxh_abc.def}]}", 1), 6, config.ErrInvalid},
		{"token with an unknown key", strings.Replace(base, "pools: [a]}", "pools: [a], tokens: [{env: X, contxt: ctx_0123456789abcdef01234567}]}", 1), 6, nil},
		{"bad approver", strings.Replace(base, "pools: [a]}", "pools: [a], approver: agent}", 1), 6, config.ErrInvalid},
		{"stdio role missing", base + "transports: {stdio: {role: ghost}}\n", 7, config.ErrUnknownReference},
		{"proxy not an address", base + "transports: {http: {proxies: [lb.example]}}\n", 7, config.ErrInvalid},
		{"proxy with a port", base + "transports: {http: {proxies: [\"10.0.0.1:8080\"]}}\n", 7, config.ErrInvalid},
		{"type error", strings.Replace(base, "path: pa", "path: [pa]", 1), 2, nil},
		// issue 10 item 11: a page larger than one answer was cut while next_offset skipped the rest.
		{"read page larger than output", "server: {max_output_bytes: 65536, max_read_bytes: 65537}\n" + base, 1, config.ErrInvalid},
		{"default page larger than small output", "server:\n  max_output_bytes: 1024\n  max_read_bytes: 4096\n" + base, 3, config.ErrInvalid},
		// issue 11: a page that outgrows the TypeScript SDK's 10 MiB stdio buffer closes the connection.
		{"page breaks stdio clients", "server:\n  max_output_bytes: 10485760\n  max_read_bytes: 10485760\n" + base, 2, config.ErrInvalid},
		{"output over the client-safe bound", "server: {max_output_bytes: 578902}\n" + base, 1, config.ErrInvalid},
		{"too many output pools", "server: {max_output_pools: 1001}\n" + base, 1, config.ErrInvalid},
		{"negative output pool age", "server: {output_pool_ttl_seconds: -1}\n" + base, 1, config.ErrInvalid},
		{"store not postgres", base + "store: /var/lib/airlock.db\n", 7, config.ErrInvalid},
		{"store with a password", base + "store: postgres://airlock:hunter2@db/airlock\n", 7, config.ErrInvalid},
		{"store with a password parameter", base + "store: postgres://airlock@db/airlock?password=hunter2\n", 7, config.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("airlock.yaml", []byte(tc.src), t.TempDir())
			var ye *yamlfile.Error
			if !errors.As(err, &ye) {
				t.Fatalf("err = %v, want a *yamlfile.Error", err)
			}
			if ye.File != "airlock.yaml" || ye.Line != tc.line {
				t.Errorf("at %s:%d, want line %d: %v", ye.File, ye.Line, tc.line, err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestStoreURL: a postgres:// URL without a password is accepted, and a
// refused one never echoes the password.
func TestStoreURL(t *testing.T) {
	c, err := config.Parse("airlock.yaml", []byte(base+"store: postgresql://airlock@db.internal:5432/airlock?sslmode=verify-full\n"), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if c.Store != "postgresql://airlock@db.internal:5432/airlock?sslmode=verify-full" {
		t.Errorf("Store = %q", c.Store)
	}
	_, err = config.Parse("airlock.yaml", []byte(base+"store: postgres://airlock:hunter2@db/airlock\n"), t.TempDir())
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("err = %v; want a refusal that does not repeat the password", err)
	}
}

func TestDefaultsAndPaths(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Parse("x.yaml", []byte(base), dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Pools[0].Path != filepath.Join(dir, "pa") || cfg.Pools[0].Trust != "untrusted" {
		t.Errorf("pool = %+v", cfg.Pools[0])
	}
	if cfg.Roles["local"].InitialPhase != config.PhasePlanning || cfg.Transports.Stdio.Role != "local" {
		t.Errorf("defaults not applied: %+v %+v", cfg.Roles, cfg.Transports)
	}
	if cfg.Server.MaxOutputBytes != config.DefaultMaxOutputBytes || cfg.Server.MaxReadBytes != config.DefaultMaxReadBytes {
		t.Errorf("server defaults: %+v", cfg.Server)
	}
}

func TestDemoLoads(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.Demo(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Pools) != 2 {
		t.Fatalf("demo pools: %+v", cfg.Pools)
	}
	for _, p := range cfg.Pools {
		if _, err := os.Stat(filepath.Join(p.Path, "SHA256SUMS")); err != nil {
			t.Errorf("pool %s not materialised: %v", p.ID, err)
		}
	}
	// A second start replaces the first's files cleanly.
	if _, err := config.Demo(dir); err != nil {
		t.Fatal(err)
	}
}

// TestDemoValidatesAgainstSchema: the committed schema accepts the demo and
// refuses an unknown key, as an editor using yaml-language-server would.
func TestDemoValidatesAgainstSchema(t *testing.T) {
	schemaDoc, err := os.ReadFile(filepath.Join("..", "..", "schemas", "config.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaDoc))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("config.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("config.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	demo, err := os.ReadFile(filepath.Join("demo", "airlock.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	check := func(src []byte) error {
		var v any
		if err := yaml.Unmarshal(src, &v); err != nil {
			t.Fatal(err)
		}
		j, _ := json.Marshal(v)
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		return sch.Validate(inst)
	}
	if err := check(demo); err != nil {
		t.Fatalf("demo does not validate: %v", err)
	}
	if err := check(append(demo, []byte("\ncolour: red\n")...)); err == nil {
		t.Fatal("schema accepted an unknown key")
	}
}

// TestApproverFor: an explicit approver wins; without one the person at the
// client approves only on stdio (and in-process), never over HTTP, where
// the client may be the agent itself.
func TestApproverFor(t *testing.T) {
	tests := []struct{ approver, transport, want string }{
		{"", "stdio", config.ApproverClient},
		{"", "inprocess", config.ApproverClient},
		{"", "streamable-http", config.ApproverOperator},
		{"", "sse", config.ApproverOperator},
		{"", "", config.ApproverOperator},
		{config.ApproverOperator, "stdio", config.ApproverOperator},
		{config.ApproverClient, "streamable-http", config.ApproverClient},
	}
	for _, tc := range tests {
		if got := (config.Role{Approver: tc.approver}).ApproverFor(tc.transport); got != tc.want {
			t.Errorf("approver %q over %q = %q, want %q", tc.approver, tc.transport, got, tc.want)
		}
	}
}

// FuzzStoreURL: whatever the store setting holds, loading either accepts a
// postgres:// URL without a password or refuses it with ErrInvalid (or a
// YAML error), and a refusal never repeats a password the URL carried.
func FuzzStoreURL(f *testing.F) {
	for _, s := range []string{
		"postgres://airlock@db/airlock", "postgresql://u:secretpw@h/d", "postgres://u@h/d?password=secretpw",
		"/var/lib/airlock.db", "postgres://%zz", "POSTGRES://u@h/d", "postgres://u:@h/d", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, store string) {
		quoted, err := json.Marshal(store) // a JSON string is a YAML scalar
		if err != nil {
			return
		}
		c, err := config.Parse("airlock.yaml", []byte(base+"store: "+string(quoted)+"\n"), t.TempDir())
		if err == nil {
			if c.Store != "" && !config.IsPostgresURL(c.Store) {
				t.Fatalf("accepted a non-postgres store %q", c.Store)
			}
			if u, err := url.Parse(c.Store); c.Store != "" && (err != nil || u.Query().Has("password")) {
				t.Fatalf("accepted store %q: %v", c.Store, err)
			} else if _, has := u.User.Password(); has {
				t.Fatalf("accepted a store with a password: %q", c.Store)
			}
			return
		}
		if strings.Contains(store, "secretpw") && strings.Contains(err.Error(), "secretpw") {
			t.Fatalf("refusal repeats the password: %v", err)
		}
	})
}

// TestContextBindingLoads: a token and an OAuth rule carry their context
// binding (issue 26 item 2) beside their other keys.
func TestContextBindingLoads(t *testing.T) {
	const id = "ctx_0123456789abcdef01234567"
	src := strings.Replace(base, "pools: [a]}", "pools: [a], tokens: [{env: X, context: "+id+"}, {file: t, require_context: true}]}", 1) +
		"transports:\n  http:\n    oauth: " + strings.Replace(oauthOK, `{role: local,`, `{role: local, context: `+id+`, require_context: true,`, 1) + "\n"
	cfg, err := config.Parse("airlock.yaml", []byte(src), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	toks := cfg.Roles["local"].Tokens
	if len(toks) != 2 || toks[0].Context != id || toks[0].RequireContext || toks[0].Source().Env != "X" || toks[1].Context != "" || !toks[1].RequireContext {
		t.Errorf("tokens: %+v", toks)
	}
	if rm := cfg.Transports.HTTP.OAuth.RoleMapping[0]; rm.Context != id || !rm.RequireContext {
		t.Errorf("role_mapping: %+v", rm)
	}
}

// TestProxyPrefixes: transports.http.proxies takes addresses and CIDR
// prefixes of either family; an address is its full-length prefix, an
// IPv4-mapped one its IPv4 form (how a dual-stack listener reports an IPv4
// peer), and a prefix is masked to its network.
func TestProxyPrefixes(t *testing.T) {
	h := config.HTTPTransport{Proxies: []string{"127.0.0.1", "10.1.2.3/8", "::1", "::ffff:192.0.2.7", "2001:db8::/32"}}
	got, err := h.ProxyPrefixes()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"127.0.0.1/32", "10.0.0.0/8", "::1/128", "192.0.2.7/32", "2001:db8::/32"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("%q: %v, want %s", h.Proxies[i], got[i], want[i])
		}
	}
	for _, bad := range []string{"", "lb", "10.0.0.1:80", "fe80::1%eth0", "10.0.0.0/33"} {
		if _, err := (config.HTTPTransport{Proxies: []string{bad}}).ProxyPrefixes(); !errors.Is(err, config.ErrInvalid) {
			t.Errorf("%q: %v, want ErrInvalid", bad, err)
		}
	}
}
