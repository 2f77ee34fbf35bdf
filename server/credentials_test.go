package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/runner"
	statedir "github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/testkit/syncbuf"
	"github.com/airlock-dev/airlock/internal/testkit/testpool"
)

// credFixture is testConfig with a role that fetches and runs pipelines,
// two credentials (one from a variable, sent as a header to one host; one
// from a file, given to pipelines as a variable), and a runner whose logs
// (JSON, debug) are captured.
type credFixture struct {
	*fixture
	c          *client.Client
	logs       *syncbuf.Buffer
	secretFile string
	envSecret  string
	fileSecret string
	responses  []string // every MCP result, as JSON
}

const credEnvVar = "AIRLOCK_TEST_CRED_API"

func newCredFixture(t *testing.T, namedHost string) *credFixture {
	t.Helper()
	rnd := func(prefix string) string {
		b := make([]byte, 12)
		rand.Read(b)
		return prefix + hex.EncodeToString(b)
	}
	cf := &credFixture{envSecret: rnd("EnvSecret-"), fileSecret: rnd("FileSecret-"), logs: &syncbuf.Buffer{}}
	t.Setenv(credEnvVar, cf.envSecret)
	cfg := fmt.Sprintf(testConfig, "credded")
	for _, r := range [][2]string{
		{"per_minute: 4}", "per_minute: 60}"},
		{"roles:\n", "roles:\n  credded: {policy: credpol, pools: [alpha, delta], initial_phase: execution}\n"},
		{"policies:\n", "policies:\n  credpol:\n    allow: [\"pool.*\", \"comm.*\", \"pipeline.run:*\"]\n    filesystem: {read: [pools], write: [out]}\n" +
			"    network: {allow_hosts: [\"127.0.0.1\"], allow_schemes: [http], allow_private: [\"127.0.0.0/8\"]}\n"},
	} {
		if !strings.Contains(cfg, r[0]) {
			t.Fatalf("testConfig moved: no %q", r[0])
		}
		cfg = strings.Replace(cfg, r[0], r[1], 1)
	}
	cfg += `  - name: use_secret
    description: Hashes its credential variable into an output (proof it got it, without printing it).
    argv: [/bin/sh, -c, 'printf %s "$API_TOKEN" | /usr/bin/sha256sum > {out}/sum.txt']
    outputs: [sum.txt]
  - name: print_secret
    description: Prints its credential on stdout and stderr.
    argv: [/bin/sh, -c, 'echo "token=$API_TOKEN"; echo "err=$API_TOKEN" >&2; echo ok > {out}/x.txt']
    outputs: [x.txt]
  - name: leak_secret
    description: Writes its credential into an output file.
    argv: [/bin/sh, -c, 'echo "leaked $API_TOKEN here" > {out}/x.txt']
    outputs: [x.txt]
  - name: print_split_secret
    description: Prints its credential split by U+200B on stdout and by U+00AD on stderr.
    argv: [/bin/sh, -c, 'printf %s "$API_TOKEN" | sed "s/./&\xe2\x80\x8b/g"; echo; printf %s "$API_TOKEN" | sed "s/./&\xc2\xad/g" >&2; echo ok > {out}/x.txt']
    outputs: [x.txt]
  - name: leak_split_secret
    description: Writes its credential split by U+200B into an output file.
    argv: [/bin/sh, -c, 'printf %s "$API_TOKEN" | sed "s/./&\xe2\x80\x8b/g" > {out}/x.txt']
    outputs: [x.txt]
credentials:
  - id: api-header
    secret: {env: ` + credEnvVar + `}
    roles: [credded]
    header: {name: Authorization, value: "Bearer {secret}", hosts: ["` + namedHost + `"]}
  - id: pipe-token
    secret: {file: secrets/pipe-token}
    roles: [credded]
    env: {name: API_TOKEN, pipelines: [use_secret, print_secret, leak_secret, print_split_secret, leak_split_secret]}
`
	f := newFixtureConfig(t, cfg)
	cf.fixture = f
	cf.secretFile = filepath.Join(f.dir, "secrets", "pipe-token")
	testpool.WriteFile(t, f.dir, "secrets/pipe-token", cf.fileSecret+"\n")
	log := slog.New(slog.NewJSONHandler(cf.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cf.fixture = f.withRunner(t, runner.Options{Logger: log}, &Options{Logger: log})
	cf.c = cf.connect(t)
	return cf
}

// call runs a tool and keeps its whole result for the final grep.
func (cf *credFixture) call(t *testing.T, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res := call(t, cf.c, tool, args)
	b, _ := json.Marshal(res)
	cf.responses = append(cf.responses, string(b))
	return res
}

// TestCredentialsNeverLeaveTheBoundary (issue 12 item 7): distinctive
// secrets, one from a variable and one from a file, are driven through
// every path — a fetch to the named host (the header checked by the real
// loopback server, which also echoes it back into the page), a fetch to
// another host, a redirect from the named host to another, a pipeline
// that uses its variable, one that prints it, one that writes it into an
// output, a revocation of each — and then the SQLite store, everything in
// the state directory, the captured JSON logs and every MCP response are
// searched for them: none holds either. Revoking (file removed, variable
// unset) refuses the next use with UNAVAILABLE and an audit record naming
// the credential, never its value; restoring is audited too.
func TestCredentialsNeverLeaveTheBoundary(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // server+path -> Authorization received
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen["other"+r.URL.Path] = r.Header.Get("Authorization")
		mu.Unlock()
		fmt.Fprintf(w, "other host page, auth=%q\n", r.Header.Get("Authorization"))
	}))
	defer other.Close()
	named := originServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen["named"+r.URL.Path] = r.Header.Get("Authorization")
		mu.Unlock()
		if r.URL.Path == "/leaky" { // puts what it was sent into the next URL
			http.Redirect(w, r, other.URL+"/landed-leaky?got="+url.QueryEscape(r.Header.Get("Authorization")), http.StatusFound)
			return
		}
		if r.URL.Path == "/away" {
			http.Redirect(w, r, other.URL+"/landed", http.StatusFound)
			return
		}
		// A host that echoes the header back: the page must reach the
		// agent scrubbed.
		fmt.Fprintf(w, "named host page, you sent %q\n", r.Header.Get("Authorization"))
	})
	cf := newCredFixture(t, strings.TrimPrefix(named.URL, "http://"))

	fetch := func(url string) *mcp.CallToolResult {
		t.Helper()
		return cf.call(t, "declare_need", need(url))
	}
	// 1. The named host gets the header; the echoed page is scrubbed.
	res := fetch(named.URL + "/page")
	if res.IsError {
		t.Fatalf("fetch named: %s", text(res))
	}
	if got := seen["named/page"]; got != "Bearer "+cf.envSecret {
		t.Errorf("named host received Authorization %q", got)
	}
	if !strings.Contains(text(res), "[REDACTED:credential:api-header]") {
		t.Errorf("the echoed header is not replaced by its marker: %s", text(res))
	}
	// 2. Another host gets nothing.
	if res := fetch(other.URL + "/direct"); res.IsError || seen["other/direct"] != "" {
		t.Errorf("fetch other: %s, auth %q", text(res), seen["other/direct"])
	}
	// 3. A redirect from the named host to another host: the first hop
	// carries it, the second does not.
	if res := fetch(named.URL + "/away"); res.IsError {
		t.Fatalf("fetch redirect: %s", text(res))
	}
	if seen["named/away"] == "" || seen["other/landed"] != "" {
		t.Errorf("redirect: named hop auth %q, other hop auth %q", seen["named/away"], seen["other/landed"])
	}

	// A named host that echoes the header into a redirect's Location: the
	// URLs the agent sees (final URL, redirect list) are scrubbed.
	if res := fetch(named.URL + "/leaky"); res.IsError {
		t.Fatalf("fetch leaky redirect: %s", text(res))
	}

	// 4. A pipeline gets its variable (its output is the secret's hash).
	res = cf.call(t, "run_pipeline", map[string]any{"pipeline": "use_secret"})
	if res.IsError {
		t.Fatalf("use_secret: %s", text(res))
	}
	sum := sha256.Sum256([]byte(cf.fileSecret))
	published := cf.publishedFile(t, "sum.txt")
	if !strings.HasPrefix(published, hex.EncodeToString(sum[:])) {
		t.Errorf("the pipeline did not see its secret: sum.txt = %q", published)
	}
	// 5. A pipeline printing it: stdout and stderr come back scrubbed.
	res = cf.call(t, "run_pipeline", map[string]any{"pipeline": "print_secret"})
	if res.IsError || !strings.Contains(text(res), "token=[REDACTED:credential:pipe-token]") {
		t.Errorf("print_secret: %s", text(res))
	}
	// 6. A pipeline writing it into an output: refused, outputs withheld.
	res = cf.call(t, "run_pipeline", map[string]any{"pipeline": "leak_secret"})
	if code(res) != string(violation.CredentialExposed) {
		t.Errorf("leak_secret: %s %s", code(res), text(res))
	}

	// 7. Revocation without a restart: the file removed, the variable unset.
	must(t, os.Remove(cf.secretFile))
	res = cf.call(t, "run_pipeline", map[string]any{"pipeline": "use_secret"})
	if code(res) != string(violation.Unavailable) {
		t.Errorf("run after revocation: %s %s", code(res), text(res))
	}
	t.Setenv(credEnvVar, "")
	res = fetch(named.URL + "/again")
	mu.Lock()
	_, reached := seen["named/again"]
	mu.Unlock()
	if code(res) != string(violation.Unavailable) || reached {
		t.Errorf("fetch after revocation: %s %s (reached the host: %v)", code(res), text(res), reached)
	}
	// An emptied file revokes too; refilling restores.
	testpool.WriteFile(t, cf.dir, "secrets/pipe-token", "\n")
	if res := cf.call(t, "run_pipeline", map[string]any{"pipeline": "use_secret"}); code(res) != string(violation.Unavailable) {
		t.Errorf("run with an emptied file: %s", code(res))
	}
	testpool.WriteFile(t, cf.dir, "secrets/pipe-token", cf.fileSecret+"\n")
	if res := cf.call(t, "run_pipeline", map[string]any{"pipeline": "use_secret"}); res.IsError {
		t.Errorf("run after restoring: %s", text(res))
	}
	// Dropping the credential from the config and reloading (SIGHUP's
	// path) stops the injection at once: the next fetch carries nothing.
	t.Setenv(credEnvVar, cf.envSecret)
	yamlText, err := os.ReadFile(filepath.Join(cf.dir, "airlock.yaml"))
	must(t, err)
	cut := strings.Index(string(yamlText), "credentials:\n")
	testpool.WriteFile(t, cf.dir, "airlock.yaml", string(yamlText[:cut]))
	reloaded, err := config.Load(filepath.Join(cf.dir, "airlock.yaml"))
	must(t, err)
	must(t, cf.r.Reload(context.Background(), reloaded, "tester"))
	if res := fetch(named.URL + "/after-reload"); res.IsError || seen["named/after-reload"] != "" {
		t.Errorf("after reload without the credential: %s, auth %q", text(res), seen["named/after-reload"])
	}
	revoked := map[string]int{}
	restored := 0
	for _, r := range cf.auditRecords(t) {
		switch r.Capability {
		case "credential.revoke":
			var x struct {
				ID string `json:"credential_id"`
			}
			_ = json.Unmarshal(r.Extra, &x)
			revoked[x.ID]++
		case "credential.restore":
			restored++
		}
	}
	if revoked["pipe-token"] < 1 || revoked["api-header"] < 1 || restored < 1 {
		t.Errorf("revocations audited %v, restorations %d", revoked, restored)
	}

	// The grep: neither secret anywhere outside its boundary.
	cf.r.Close() // flush the store and the witness
	places := map[string]string{"logs": cf.logs.String()}
	for i, r := range cf.responses {
		places[fmt.Sprintf("response %d", i)] = r
	}
	must(t, filepath.WalkDir(cf.state, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		places[p] = string(b)
		return nil
	}))
	if _, ok := places[filepath.Join(cf.state, statedir.DBFile)]; !ok {
		t.Fatalf("the store file was not searched: %v", len(places))
	}
	for where, content := range places {
		for _, s := range []string{cf.envSecret, cf.fileSecret} {
			if strings.Contains(content, s) {
				t.Errorf("a secret (%s…) is in %s", s[:10], where)
			}
		}
	}
	if !strings.Contains(places["logs"], `"credential":"pipe-token"`) {
		t.Error("the revocation is not logged by id")
	}
}

// publishedFile reads name from the newest run's published outputs.
func (cf *credFixture) publishedFile(t *testing.T, name string) string {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(cf.state, "runs", "*", "published", name))
	if len(matches) == 0 {
		t.Fatalf("no published %s", name)
	}
	b, err := os.ReadFile(matches[len(matches)-1])
	must(t, err)
	return string(b)
}
