package server

import (
	"context"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/runner"
)

// TestDeclareNeedNormalisedURL: through the whole stack, a path rule
// (ext's gated-needs-ok: url.path startsWith "/gated") holds however the
// agent spells the path. Before normalisation, "/x/../gated/secret.txt" and
// "//gated/secret.txt" were auto-approved and fetched (issue 10, item 1).
// The declaration stores, and the operator is shown, the normal form; a
// path that hides a dot segment behind an escape is refused outright.
func TestDeclareNeedNormalisedURL(t *testing.T) {
	o := newOrigin(t)
	f := newFixture(t, "fetcher")
	c := f.connect(t)
	for _, p := range []string{"/x/../gated/secret.txt", "//gated/secret.txt", "/./gated/secret.txt", "/x/%2e%2e/%67ated/secret.txt"} {
		t.Run(p, func(t *testing.T) {
			res := call(t, c, "declare_need", need(o.URL+p))
			if res.IsError || structured(t, res)["state"] != "declared" || !strings.Contains(text(res), "gated-needs-ok") {
				t.Fatalf("not held for approval: %s", text(res))
			}
			if o.hits.Load() != 0 {
				t.Fatalf("fetched without approval: %d requests", o.hits.Load())
			}
		})
	}
	op, err := runner.OpenOperator(f.state, true)
	must(t, err)
	defer op.Close()
	list, err := op.Approvals(context.Background(), false)
	must(t, err)
	if len(list) != 4 {
		t.Fatalf("%d declarations waiting, want 4", len(list))
	}
	for _, d := range list {
		if d.Need.Parameters.URL != o.URL+"/gated/secret.txt" {
			t.Errorf("stored URL %q, want the normal form", d.Need.Parameters.URL)
		}
	}
	for _, p := range []string{"/x/..%2Fgated/secret.txt", "/x/..;/gated/secret.txt", "/%2Fgated/secret.txt"} {
		t.Run("refused "+p, func(t *testing.T) {
			res := call(t, c, "declare_need", need(o.URL+p))
			if code(res) != "INVALID_ARGUMENTS" || !strings.Contains(text(res), "parameters.url") || strings.Contains(text(res), p) {
				t.Fatalf("code %q: %s", code(res), text(res))
			}
		})
	}
	if o.hits.Load() != 0 {
		t.Fatalf("origin hit %d times", o.hits.Load())
	}
}
