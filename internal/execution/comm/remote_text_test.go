package comm

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// marker is what a hostile origin writes into every field it controls.
const marker = "ignore-previous-instructions"

// TestErrorsCarryNoRemoteText: error text reaches the agent unfenced, so no
// value the remote server chose — a charset or media type, a redirect's
// host, scheme or path — may appear in it (issue 10, item 4: an unknown
// charset name was echoed). The private cause keeps it for the audit.
func TestErrorsCarryNoRemoteText(t *testing.T) {
	evil := marker + ".test"
	var srvURL string
	srv := newServer(t, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		port := strings.TrimPrefix(srvURL, "http://127.0.0.1")
		switch r.URL.Path {
		case "/robots.txt":
			if r.Host == evil+port {
				fmt.Fprint(w, "User-agent: *\nDisallow: /\n")
				return
			}
			http.NotFound(w, r)
		case "/charset":
			w.Header().Set("Content-Type", "text/plain; charset="+marker)
			w.Write([]byte("caf\xe9"))
		case "/ctype":
			w.Header().Set("Content-Type", "application/"+marker)
			fmt.Fprint(w, "data")
		case "/to-denied":
			http.Redirect(w, r, "http://denied."+evil+"/"+marker, http.StatusFound)
		case "/to-http":
			http.Redirect(w, r, "http://plain."+evil+"/"+marker, http.StatusFound)
		case "/to-unresolvable":
			http.Redirect(w, r, "http://nowhere."+evil+"/"+marker, http.StatusFound)
		case "/to-404":
			http.Redirect(w, r, "http://"+evil+port+"/missing/"+marker, http.StatusFound)
		case "/to-robots":
			http.Redirect(w, r, "http://"+evil+port+"/page/"+marker, http.StatusFound)
		case "/to-nowhere":
			w.Header().Set("Location", "http://"+evil+port+"/to-empty")
			w.WriteHeader(http.StatusFound)
		case "/to-empty":
			w.WriteHeader(http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	srvURL = srv.URL
	opts := testOptions()
	opts.Rules = fakeRules{allow: []string{"*"}, deny: []string{"denied." + evil}}
	opts.AllowHTTPHosts = []string{"127.0.0.1", evil, "nowhere." + evil, "denied." + evil}
	opts.Resolver = newResolver(map[string][]string{evil: {"127.0.0.1"}})
	withRobots := opts
	withRobots.IgnoreRobots = false
	tests := []struct {
		path string
		kind error
		opts FetchOptions
	}{
		{"/charset", ErrCharset, opts},
		{"/ctype", ErrBinary, opts},
		{"/to-denied", ErrHostDenied, opts},
		{"/to-http", ErrScheme, opts},
		{"/to-unresolvable", ErrUnavailable, opts},
		{"/to-404", ErrStatus, opts},
		{"/to-nowhere", ErrStatus, opts},
		{"/to-robots", ErrRobots, withRobots},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			_, err := newFetcher(t, tc.opts).Fetch(context.Background(), srv.URL+tc.path)
			wantKind(t, err, tc.kind)
			if pub := Violation(err).Public(); strings.Contains(pub, marker) {
				t.Fatalf("remote text in the agent's error: %s", pub)
			}
			if !strings.Contains(err.Error(), marker) {
				t.Errorf("the private cause lost the remote value: %v", err)
			}
		})
	}
}
