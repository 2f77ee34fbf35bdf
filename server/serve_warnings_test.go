package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/runner"
	"github.com/airlock-dev/airlock/internal/testkit/syncbuf"
)

// initLikeConfig has the shape `airlock init` writes: one stdio role, no
// HTTP credential of any kind.
const initLikeConfig = `
pools:
  - {id: alpha, description: Files, path: pools/alpha, trust: untrusted}
policies:
  default: {allow: ["pool.*"]}
roles:
  local: {policy: default, pools: [alpha]}
transports:
  stdio: {role: local}
`

// TestWarnsWhenNoHTTPClientCanAuthenticate (issue 24 item 9): serve --http
// on a configuration where no role has a usable token, no OAuth is set and
// there is no anonymous role logs, once, that every request will get 401 —
// and not where a client can authenticate. A reload that changes nothing
// does not repeat the warnings.
func TestWarnsWhenNoHTTPClientCanAuthenticate(t *testing.T) {
	cases := []struct {
		name   string
		config string
		tokens bool
		want   bool
	}{
		{"the init configuration", initLikeConfig, false, true},
		{"roles whose token variables are unset", fmt.Sprintf(testConfig, "local"), false, true},
		{"roles with tokens", fmt.Sprintf(testConfig, "local"), true, false},
		{"an anonymous role", withHTTP(t, fmt.Sprintf(testConfig, "local"), "anonymous_role: agent"), false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.tokens {
				setTokens(t)
			}
			var logBuf syncbuf.Buffer
			f := newFixtureConfig(t, tc.config).withRunner(t, runner.Options{}, &Options{Logger: newTestLogger(&logBuf)})
			base := serveLoopback(t, f.srv)
			// ServeHTTP logs its warnings before it serves: once this is
			// answered, they are in the log.
			resp, err := http.Get(base + PathHealthz)
			must(t, err)
			resp.Body.Close()
			must(t, f.srv.Reload())
			if n := strings.Count(logBuf.String(), "no HTTP client can authenticate"); n != map[bool]int{true: 1, false: 0}[tc.want] {
				t.Fatalf("the warning is logged %d times:\n%s", n, logBuf.String())
			}
			if strings.Count(logBuf.String(), "unset or empty") > strings.Count(fmt.Sprintf(testConfig, "local"), "env: AIRLOCK_TEST_TOKEN") {
				t.Fatalf("a warning is repeated:\n%s", logBuf.String())
			}
		})
	}
}
