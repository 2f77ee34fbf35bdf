package comm

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// TestFetchHeadersPerHop (issue 12 item 7): the extra headers are asked
// for each hop by that hop's own host, so a credential meant for one host
// is sent to it and never to another host a redirect leads to (not even
// one on the same IP with another port), nor with the robots.txt
// request; an error from the source stops the fetch before anything is
// sent (ErrCredential, UNAVAILABLE) and its cause is not in the public
// message.
func TestFetchHeadersPerHop(t *testing.T) {
	var mu sync.Mutex
	got := map[string]string{} // host+path -> Authorization seen
	record := func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[r.Host+r.URL.Path] = r.Header.Get("Authorization")
		mu.Unlock()
	}
	other := newServer(t, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(w, r)
		body("text/plain", "other")(w, r)
	}))
	named := newServer(t, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(w, r)
		switch {
		case r.URL.Path == "/robots.txt":
			body("text/plain", "User-agent: *\nAllow: /\n")(w, r)
		case r.URL.Path == "/away":
			http.Redirect(w, r, other.URL+"/landed", http.StatusFound)
		case r.URL.Path == "/home":
			http.Redirect(w, r, "/again", http.StatusFound)
		default:
			body("text/plain", "named")(w, r)
		}
	}))
	namedHost := strings.TrimPrefix(named.URL, "http://")
	var asked []string
	opts := testOptions()
	opts.IgnoreRobots = false
	opts.Headers = func(host string) (http.Header, error) {
		mu.Lock()
		asked = append(asked, host)
		mu.Unlock()
		if host == namedHost {
			return http.Header{"Authorization": {"Bearer tok-per-hop-123"}}, nil
		}
		return nil, nil
	}
	f := newFetcher(t, opts)
	for _, path := range []string{"/page", "/away", "/home"} {
		if _, err := f.Fetch(context.Background(), named.URL+path); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	otherHost := strings.TrimPrefix(other.URL, "http://")
	for key, want := range map[string]string{
		namedHost + "/page":       "Bearer tok-per-hop-123",
		namedHost + "/away":       "Bearer tok-per-hop-123",
		namedHost + "/again":      "Bearer tok-per-hop-123", // same host: still the named one
		otherHost + "/landed":     "",                       // another host (same IP, other port)
		namedHost + "/robots.txt": "",                       // never with robots.txt
		otherHost + "/robots.txt": "",
	} {
		if got[key] != want {
			t.Errorf("%s got Authorization %q, want %q", key, got[key], want)
		}
	}

	// A source that fails: nothing is requested, the cause stays private.
	before := named.conns.Load()
	opts.IgnoreRobots = true
	opts.Headers = func(string) (http.Header, error) { return nil, errors.New("credential api: file missing") }
	f = newFetcher(t, opts)
	_, err := f.Fetch(context.Background(), named.URL+"/page")
	wantKind(t, err, ErrCredential)
	if v := Violation(err); v.Code != "UNAVAILABLE" || strings.Contains(v.Public(), "file missing") {
		t.Errorf("violation %s %q", v.Code, v.Public())
	}
	if named.conns.Load() != before {
		t.Error("a request was sent although its credential failed")
	}
}
