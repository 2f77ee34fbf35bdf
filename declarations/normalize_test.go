package declarations_test

import (
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/declarations"
)

// TestNormalize: the stored need carries the URL's normal form, the one the
// policy judged and the fetcher requests, so the approver sees /gated/a
// where the agent wrote /x/../gated/a (issue 10, item 1).
func TestNormalize(t *testing.T) {
	tests := []struct {
		name, url, want, field string
	}{
		{"dot-dot", "https://docs.test/x/../gated/a", "https://docs.test/gated/a", ""},
		{"doubled slash", "https://docs.test//gated/a", "https://docs.test/gated/a", ""},
		{"case and default port", "HTTPS://Docs.Test:443/gated/%61", "https://docs.test/gated/a", ""},
		{"hidden dot-dot", "https://docs.test/x/..%2Fgated/a", "", "parameters.url"},
		{"Tomcat dot-dot", "https://docs.test/x/..;/gated/a", "", "parameters.url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, _, _ := newTestManager(nil)
			n := withURL(tc.url)
			d, err := m.Declare(ctx, "s1", "alice", n, declarations.DecisionRequireApproval, "gated", "")
			if tc.field != "" {
				var fe *declarations.FieldError
				if !errors.As(err, &fe) || fe.Field != tc.field || d != nil {
					t.Fatalf("got %v, %v; want a refusal of %s", d, err, tc.field)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := withURL(tc.want)
			if d.Need.Parameters.URL != tc.want || d.Fingerprint != want.Fingerprint() {
				t.Fatalf("stored %q (fingerprint %s), want %q", d.Need.Parameters.URL, d.Fingerprint, tc.want)
			}
			if n.Parameters.URL != tc.url {
				t.Fatal("Declare changed the caller's need")
			}
		})
	}
	// Other operations are left as they are.
	s := validSearch()
	if err := s.Normalize(); err != nil || s.Parameters.Query != validSearch().Parameters.Query {
		t.Fatalf("search need: %v %+v", err, s)
	}
}
