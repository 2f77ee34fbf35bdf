package comm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/airlock-dev/airlock/internal/policy/policy"
)

// The policy is the production HostRules, and its CheckIP is picked up.
var (
	_ HostRules = (*policy.Policy)(nil)
	_ IPRules   = (*policy.Policy)(nil)
)

// TestFetchWithPolicy runs the fetcher with a real compiled policy: its
// allow/deny hosts gate the first URL and redirects, and its CheckIP runs
// at connect time.
func TestFetchWithPolicy(t *testing.T) {
	srv := newServer(t, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-denied":
			http.Redirect(w, r, "http://denied.test/", http.StatusFound)
		default:
			fmt.Fprint(w, "ok")
		}
	}))
	pol, err := policy.Compile(policy.Spec{
		Allow: []string{"comm.*"},
		Network: policy.NetworkSpec{
			AllowHosts:   []string{"127.0.0.1", "*.test"},
			DenyHosts:    []string{"denied.test"},
			AllowSchemes: []string{"http", "https"},
			AllowPrivate: []string{"127.0.0.0/8"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := testOptions()
	opts.Rules = pol
	opts.AllowHTTPHosts = []string{"127.0.0.1", "denied.test", "other.test"}
	opts.Resolver = newResolver(map[string][]string{"denied.test": {"127.0.0.1"}})
	f := newFetcher(t, opts)
	if doc, err := f.Fetch(context.Background(), srv.URL+"/"); err != nil || doc.Text != "ok" {
		t.Fatalf("allowed fetch: %v", err)
	}
	_, err = f.Fetch(context.Background(), srv.URL+"/to-denied")
	wantKind(t, err, ErrHostDenied)
	if !errors.Is(err, policy.ErrNetworkDenied) {
		t.Errorf("does not wrap the policy's error: %v", err)
	}
	// other.test is allowed by name, but resolves nowhere the policy knows:
	// the resolver has no answer, so it is unavailable, not a leak.
	_, err = f.Fetch(context.Background(), "http://other.test/")
	wantKind(t, err, ErrUnavailable)
}
