package comm

import (
	"context"
	"net/http"
	"net/url"
	"testing"
)

// judgingRules records every URL the fetcher asks about.
type judgingRules struct{ judged recorder }

func (r *judgingRules) CheckURL(u *url.URL) error {
	r.judged.add(u.String())
	return nil
}

// TestFetchRequestsTheNormalForm: the URL the rules judge, the URL
// requested on the wire and Document.RequestedURL are one string, the
// normal form — for the first URL and for a redirect target (issue 10,
// item 1: "/x/../gated" and "//gated" were judged as written and served as
// /gated). A URL with no normal form is refused before any connection.
func TestFetchRequestsTheNormalForm(t *testing.T) {
	var wire recorder
	srv := newServer(t, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wire.add(r.RequestURI)
		if r.URL.Path == "/hop" {
			w.Header().Set("Location", "/y/..//gated/%62")
			w.WriteHeader(http.StatusFound)
			return
		}
		body("text/plain", "ok")(w, r)
	}))
	tests := []struct {
		in            string
		judged, wire  []string
		wantRequested string
	}{
		{"/x/../gated/a", []string{"/gated/a"}, []string{"/gated/a"}, "/gated/a"},
		{"//gated/a", []string{"/gated/a"}, []string{"/gated/a"}, "/gated/a"},
		{"/x/%2e%2e/gated/%61", []string{"/gated/a"}, []string{"/gated/a"}, "/gated/a"},
		{"/hop", []string{"/hop", "/gated/b"}, []string{"/hop", "/gated/b"}, "/hop"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			rules := &judgingRules{}
			opts := testOptions()
			opts.Rules = rules
			f := newFetcher(t, opts)
			wire.reset()
			doc, err := f.Fetch(context.Background(), srv.URL+tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if doc.RequestedURL != srv.URL+tc.wantRequested {
				t.Errorf("RequestedURL = %q", doc.RequestedURL)
			}
			requested, judged := wire.list(), rules.judged.list()
			for i := range tc.wire {
				if i >= len(requested) || requested[i] != tc.wire[i] || judged[i] != srv.URL+tc.judged[i] {
					t.Fatalf("judged %q, requested %q; want both %q", judged, requested, tc.wire)
				}
			}
			if len(requested) != len(tc.wire) || len(judged) != len(tc.judged) {
				t.Fatalf("judged %q, requested %q; want %q", judged, requested, tc.wire)
			}
		})
	}
	for _, in := range []string{"/x/..%2Fgated/a", "/%2Fgated/a", "/x/..;/gated/a"} {
		t.Run("refused "+in, func(t *testing.T) {
			before := srv.conns.Load()
			_, err := newFetcher(t, testOptions()).Fetch(context.Background(), srv.URL+in)
			wantKind(t, err, ErrInvalidURL)
			if srv.conns.Load() != before {
				t.Fatal("a URL without a normal form reached the origin")
			}
		})
	}
}
