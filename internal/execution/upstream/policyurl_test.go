package upstream

import (
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/policy"
)

// TestCheckUpstreamURL: the execution-time check of an HTTP upstream's
// host (callUpstream runs it before dialling, for a declaration collected
// under a policy that may have narrowed since it was judged) refuses what
// the policy's network section refuses, with POLICY_DENIED and the policy's
// sentinel; a stdio upstream has no URL to judge; no policy fails closed.
func TestCheckUpstreamURL(t *testing.T) {
	src := []byte(`policies:
  open:
    allow: ["mcp.*"]
    network: {allow_hosts: ["127.0.0.1"], allow_schemes: [http], allow_private: ["127.0.0.0/8"]}
  closed:
    allow: ["mcp.*"]
    network: {allow_hosts: ["mcp.example.org"]}
`)
	specs, err := policy.DecodePolicies("p.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	set, err := policy.CompileSet("p.yaml", src, specs)
	if err != nil {
		t.Fatal(err)
	}
	open, _ := set.Get("open")
	closed, _ := set.Get("closed")
	httpUp := config.Upstream{ID: "up", URL: "http://127.0.0.1:9/mcp"}
	stdioUp := config.Upstream{ID: "local", Command: []string{"/bin/true"}}
	for _, tc := range []struct {
		name string
		pol  *policy.Policy
		up   config.Upstream
		ok   bool
	}{
		{"allowed host", open, httpUp, true},
		{"host outside allow_hosts", closed, httpUp, false},
		{"stdio upstream", closed, stdioUp, true},
		{"no policy", nil, httpUp, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckURL(tc.pol, tc.up)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckURL = %v, want ok=%v", err, tc.ok)
			}
			if err == nil {
				return
			}
			var v *violation.Error
			if !errors.As(err, &v) || v.Code != violation.PolicyDenied {
				t.Fatalf("refusal %v is not POLICY_DENIED", err)
			}
			if tc.pol != nil && !errors.Is(err, policy.ErrNetworkDenied) {
				t.Fatalf("refusal %v does not wrap ErrNetworkDenied", err)
			}
		})
	}
}
