package comm

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// hopRules is fakeRules plus a CheckHop that gates or denies paths by
// prefix, the way a policy's rules would.
type hopRules struct {
	fakeRules
	gated, denied, broken string
}

func (r hopRules) CheckHop(u *url.URL) error {
	switch {
	case strings.HasPrefix(u.Path, r.gated):
		return &RuleError{RuleID: "gated-needs-ok", Approval: true, Err: errors.New("gated")}
	case strings.HasPrefix(u.Path, r.denied):
		return &RuleError{RuleID: "no-private", Err: errors.New("private")}
	case strings.HasPrefix(u.Path, r.broken):
		return errors.New("policy unavailable")
	}
	return nil
}

// TestFetchHopRules: a redirect target gets the caller's full decision, so
// a 302 from an allowed path into a gated or denied one stops the fetch
// with the code a direct request would get, and the target is never
// requested (issue 10, item 2). A HopRules error that is not a RuleError
// denies: fail closed.
func TestFetchHopRules(t *testing.T) {
	var requested recorder
	srv := newServer(t, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requested.add(r.URL.Path)
		if to, ok := strings.CutPrefix(r.URL.Path, "/to"); ok {
			http.Redirect(w, r, to, http.StatusFound)
			return
		}
		body("text/plain", "ok")(w, r)
	}))
	opts := testOptions()
	opts.Rules = hopRules{fakeRules: fakeRules{allow: []string{"127.0.0.1"}}, gated: "/gated", denied: "/private", broken: "/broken"}
	f := newFetcher(t, opts)
	tests := []struct {
		path string
		kind error
		code violation.Code
	}{
		{"/to/open/a", nil, ""},
		{"/to/gated/secret.txt", ErrRedirectNeedsApproval, violation.ApprovalRequired},
		{"/to/x/../gated/secret.txt", ErrRedirectNeedsApproval, violation.ApprovalRequired},
		{"/to/private/key", ErrRedirectDenied, violation.PolicyDenied},
		{"/to/broken", ErrRedirectDenied, violation.PolicyDenied},
		// The first URL was decided by the caller: CheckHop is for hops.
		{"/gated/direct", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			requested.reset()
			_, err := f.Fetch(context.Background(), srv.URL+tc.path)
			wantKind(t, err, tc.kind)
			if tc.kind == nil {
				return
			}
			if got := Code(err); got != tc.code {
				t.Errorf("code %s, want %s", got, tc.code)
			}
			if got := requested.list(); len(got) != 1 {
				t.Errorf("requested %q: the refused target was requested", got)
			}
			var e *Error
			errors.As(err, &e)
			if pub := e.Public(); !strings.Contains(pub, "redirect 1") || strings.Contains(pub, "private\"") {
				t.Errorf("public text %q", pub)
			}
		})
	}
}
