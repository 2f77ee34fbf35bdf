package comm

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestFetchRedirectToMappedHostRefused: a redirect whose Location spells a
// denied host so that the policy reads another name — full-width "ｅ"
// (here percent-encoded) — while net/http maps it through IDNA and dials
// the denied host itself. Found by FuzzNetworkJudgesDialledHost; before
// the fix the hop was judged as "ｅxample.com", passed deny_hosts, and the
// fetch reached example.com's /secret over TLS verified for example.com.
func TestFetchRedirectToMappedHostRefused(t *testing.T) {
	var secret atomic.Int64
	var port string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/secret" {
			secret.Add(1)
			fmt.Fprint(w, "secret")
			return
		}
		w.Header().Set("Location", "https://%EF%BD%85xample.com:"+port+"/secret")
		w.WriteHeader(http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	port = srv.URL[strings.LastIndexByte(srv.URL, ':')+1:]
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate()) // valid for 127.0.0.1 and example.com
	opts := testOptions()
	opts.Rules = fakeRules{allow: []string{"*"}, deny: []string{"example.com"}}
	opts.Resolver = newResolver(map[string][]string{"example.com": {"127.0.0.1"}})
	opts.RootCAs = roots
	f := newFetcher(t, opts)

	if _, err := f.Fetch(context.Background(), "https://example.com:"+port+"/secret"); err == nil {
		t.Fatal("the denied host itself was fetched")
	}
	doc, err := f.Fetch(context.Background(), srv.URL+"/go")
	wantKind(t, err, ErrInvalidURL)
	if doc != nil || secret.Load() != 0 {
		t.Fatalf("the redirect reached the denied host: %d requests for /secret", secret.Load())
	}
}
