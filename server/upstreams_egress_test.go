package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// egressNameMap is the fixture's EgressResolver: the test names map to
// loopback (allowed by comm.fetch.allow_private in the test config, the
// tests' override), anything else does not resolve.
type egressNameMap map[string]string

func (m egressNameMap) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

var egressNames = egressNameMap{"allowed.example": "127.0.0.1", "blocked.example": "127.0.0.1", "other.example": "127.0.0.1"}

// TestUpstreamStdioEgress: a sandboxed stdio upstream whose config names
// hosts reaches them through Airlock's egress proxy and nothing else:
//   - a host in its hosts and allowed by the caller's policy is reached,
//     over https (CONNECT) and http (absolute form);
//   - a host not in its hosts is refused, and audited;
//   - a host in its hosts that the policy's network section denies is
//     refused, and audited;
//   - a direct connection (no proxy) to a listener on the host fails;
//   - each request is audited by host and port, never by path.
func TestUpstreamStdioEgress(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the sandbox needs root")
	}
	bin := buildProbe(t)
	var hits atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "hello %s", r.Host)
	})
	tlsSrv := httptest.NewTLSServer(h)
	defer tlsSrv.Close()
	plain := httptest.NewServer(h)
	defer plain.Close()
	tlsPort := tlsSrv.Listener.Addr().(*net.TCPAddr).Port
	httpPort := plain.Listener.Addr().(*net.TCPAddr).Port

	// The caller's policy allows both names but denies blocked.example;
	// its allow_private admits the loopback the names resolve to.
	cfg := strings.Replace(fmt.Sprintf(testConfig, "egresser"), "policies:\n", `policies:
  egress:
    allow: ["pool.*", "mcp.net.*"]
    network: {allow_hosts: ["allowed.example", "blocked.example"], deny_hosts: ["blocked.example"], allow_schemes: [https, http], allow_private: ["127.0.0.0/8"]}
`, 1)
	cfg = strings.Replace(cfg, "roles:\n", "roles:\n  egresser: {policy: egress, pools: [alpha], initial_phase: execution}\n", 1)
	cfg += fmt.Sprintf(`upstreams:
  - id: net
    command: [%s]
    read_only: [%s]
    hosts: ["allowed.example:%d", "allowed.example:%d", "blocked.example:%d"]
    timeout_ms: 20000
`, bin, filepath.Dir(bin), tlsPort, httpPort, tlsPort)
	f := newFixtureConfig(t, cfg)
	approveProbe(t, f, "net", "probe")

	c := f.connect(t)
	probe := func(url string) string {
		t.Helper()
		n := mcpNeed("probe", map[string]any{"addr": plain.Listener.Addr().String(), "path": "/", "url": url})
		n["parameters"].(map[string]any)["upstream"] = "net"
		res := call(t, c, "declare_need", n)
		if res.IsError {
			t.Fatalf("%s: %s", url, text(res))
		}
		return text(res)
	}
	cases := []struct {
		name, url, want string
		allowed         bool
		host            string
		errHas          string
	}{
		{"https, configured and allowed", fmt.Sprintf("https://allowed.example:%d/secret-path", tlsPort), "fetch: 200 hello allowed.example", true, "allowed.example", ""},
		{"http, configured and allowed", fmt.Sprintf("http://allowed.example:%d/secret-path", httpPort), "fetch: 200 hello allowed.example", true, "allowed.example", ""},
		{"not in the upstream's hosts", fmt.Sprintf("https://other.example:%d/secret-path", tlsPort), "fetch: refused", false, "other.example", "not in the upstream's hosts"},
		{"in hosts, denied by the policy", fmt.Sprintf("https://blocked.example:%d/secret-path", tlsPort), "fetch: refused", false, "blocked.example", "network.deny_hosts"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := hits.Load()
			out := probe(tc.url)
			if !strings.Contains(out, tc.want) {
				t.Fatalf("probe: %s", out)
			}
			// No proxy: a direct connection to the same host listener fails.
			if !strings.Contains(out, "dial: refused") {
				t.Fatalf("direct connection: %s", out)
			}
			if got := hits.Load() - before; (got == 1) != tc.allowed {
				t.Fatalf("the server saw %d requests", got)
			}
			rec := lastEgressRecord(t, f, tc.host)
			if (rec.Decision == "allow") != tc.allowed || !strings.Contains(rec.Error, tc.errHas) {
				t.Fatalf("audit: %+v", rec)
			}
			// Host, port and decision only: never a path (or any content).
			if strings.Contains(rec.Reason+rec.Error+string(rec.Extra)+string(rec.Args), "secret-path") {
				t.Fatalf("the audit holds the request's path: %+v", rec)
			}
			if !tc.allowed && rec.Violation != string(violation.NetworkAccessAttempt) {
				t.Fatalf("audit violation %q", rec.Violation)
			}
		})
	}
}

// lastEgressRecord is the newest upstream.egress record for host.
func lastEgressRecord(t *testing.T, f *fixture, host string) audit.Record {
	t.Helper()
	recs := f.auditRecords(t)
	for i := len(recs) - 1; i >= 0; i-- {
		r := recs[i]
		if r.Capability != "upstream.egress" {
			continue
		}
		var extra struct {
			Host string `json:"host"`
		}
		must(t, json.Unmarshal(r.Extra, &extra))
		if extra.Host == host {
			return r
		}
	}
	t.Fatalf("no upstream.egress record for %s", host)
	return audit.Record{}
}
