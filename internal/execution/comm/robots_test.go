package comm

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestParseRobots: group selection and longest-match, RFC 9309 style.
func TestParseRobots(t *testing.T) {
	tests := []struct {
		name, robots string
		allowed      []string
		disallowed   []string
	}{
		{"empty", "", []string{"/", "/a"}, nil},
		{"star only", "User-agent: *\nDisallow: /private\n", []string{"/", "/public"}, []string{"/private", "/private/x", "/privateer"}},
		{"our group wins over star", "User-agent: *\nDisallow: /\n\nUser-agent: Airlock\nDisallow: /secret\n",
			[]string{"/", "/open"}, []string{"/secret"}},
		{"version and case ignored", "User-agent: AIRLOCK/9.9\nDisallow: /x\n", []string{"/y"}, []string{"/x"}},
		{"other bot ignored", "User-agent: Googlebot\nDisallow: /\n", []string{"/"}, nil},
		{"prefix of our name is another bot", "User-agent: air\nDisallow: /\n", []string{"/"}, nil},
		{"longest match", "User-agent: *\nDisallow: /a\nAllow: /a/b\nDisallow: /a/b/c\n",
			[]string{"/a/b", "/a/bx"}, []string{"/a", "/a/x", "/a/b/c"}},
		{"allow wins tie", "User-agent: *\nDisallow: /page\nAllow: /page\n", []string{"/page"}, nil},
		{"wildcard and anchor", "User-agent: *\nDisallow: /*.pdf$\nDisallow: /tmp*/x\n",
			[]string{"/a.pdf?x", "/a.pdfx", "/tmp/y"}, []string{"/a.pdf", "/b/c.pdf", "/tmp/x", "/tmpdir/sub/x"}},
		{"query string", "User-agent: *\nDisallow: /*?*session=\n", []string{"/a?b=1"}, []string{"/a?session=1", "/a?x=1&session=2"}},
		{"empty disallow allows", "User-agent: *\nDisallow:\n", []string{"/"}, nil},
		{"groups merge", "User-agent: airlock\nDisallow: /a\n\nUser-agent: airlock\nDisallow: /b\n", []string{"/c"}, []string{"/a", "/b"}},
		{"shared group", "User-agent: other\nUser-agent: airlock\nDisallow: /x\n", nil, []string{"/x"}},
		{"comments, CRLF, BOM, sitemap", "\uFEFFUser-agent: * # all\r\nSitemap: https://x/s.xml\r\nDisallow: /c # no\r\n", []string{"/"}, []string{"/c"}},
		{"rules before any group ignored", "Disallow: /\nUser-agent: *\nDisallow: /x\n", []string{"/"}, []string{"/x"}},
		{"percent encoding", "User-agent: *\nDisallow: /caf%c3%a9\nDisallow: /ü\n", nil, []string{"/caf%C3%A9", "/%C3%BC"}},
		{"robots.txt always allowed", "User-agent: *\nDisallow: /\n", []string{"/robots.txt"}, []string{"/"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := parseRobots(tt.robots, "airlock")
			for _, p := range tt.allowed {
				if !r.allowed(p) {
					t.Errorf("%q disallowed", p)
				}
			}
			for _, p := range tt.disallowed {
				if r.allowed(p) {
					t.Errorf("%q allowed", p)
				}
			}
		})
	}
}

// TestFetchRobots: robots.txt is fetched through the same guarded client,
// cached per origin, and its failure modes follow RFC 9309.
func TestFetchRobots(t *testing.T) {
	var robotsHits atomic.Int64
	mode := atomic.Value{}
	mode.Store("rules")
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := newServer(t, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" {
			fmt.Fprint(w, "page")
			return
		}
		robotsHits.Add(1)
		switch mode.Load().(string) {
		case "rules":
			fmt.Fprint(w, "User-agent: *\nDisallow: /\n\nUser-agent: airlock\nDisallow: /private\nAllow: /private/ok\n")
		case "404":
			http.NotFound(w, r)
		case "500":
			http.Error(w, "down", 500)
		case "redirect-denied":
			http.Redirect(w, r, "http://elsewhere.test/robots.txt", http.StatusFound)
		case "hang":
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
	}))
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	opts := testOptions()
	opts.IgnoreRobots = false
	opts.Timeout = 2 * time.Second
	opts.Now = func() time.Time { return clock }
	fetch := func(f *Fetcher, path string) error {
		_, err := f.Fetch(context.Background(), srv.URL+path)
		return err
	}

	f := newFetcher(t, opts)
	for _, tt := range []struct {
		path string
		kind error
	}{{"/public", nil}, {"/private/x", ErrRobots}, {"/private/ok", nil}, {"/private", ErrRobots}} {
		wantKind(t, fetch(f, tt.path), tt.kind)
	}
	if n := robotsHits.Load(); n != 1 {
		t.Errorf("robots.txt fetched %d times, want 1 (cached)", n)
	}
	clock = clock.Add(25 * time.Hour) // past the 24 h TTL
	wantKind(t, fetch(f, "/public"), nil)
	if n := robotsHits.Load(); n != 2 {
		t.Errorf("robots.txt fetched %d times after expiry, want 2", n)
	}

	for _, tt := range []struct {
		mode string
		kind error
	}{
		{"404", nil},             // unavailable: allow all
		{"redirect-denied", nil}, // a redirect we will not follow: unavailable
		{"500", ErrRobots},       // unreachable: disallow all
		{"hang", ErrRobots},      // no answer within the robots timeout: disallow all
	} {
		t.Run(tt.mode, func(t *testing.T) {
			mode.Store(tt.mode)
			wantKind(t, fetch(newFetcher(t, opts), "/private/x"), tt.kind)
		})
	}

	mode.Store("rules")
	o := opts
	o.IgnoreRobots = true
	before := robotsHits.Load()
	wantKind(t, fetch(newFetcher(t, o), "/private/x"), nil)
	if robotsHits.Load() != before {
		t.Error("IgnoreRobots still fetched robots.txt")
	}
}
