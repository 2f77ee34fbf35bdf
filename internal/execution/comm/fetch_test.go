package comm

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestFetchContent: each content type ends as text or as the right
// refusal, against a real loopback server.
func TestFetchContent(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	srv := newServer(t, "", routes(map[string]func(http.ResponseWriter, *http.Request){
		"/html":      body("text/html; charset=utf-8", `<html><head><title>T</title><script>evil()</script></head><body><h1>Head</h1><p>Para &amp; more</p></body></html>`),
		"/xhtml":     body("application/xhtml+xml", `<html><body><p>x</p></body></html>`),
		"/json":      body("application/json", `{"a": [1, 2], "b": "<p>not html</p>"}`),
		"/ldjson":    body("application/ld+json", `{"@context": "x"}`),
		"/text":      body("text/plain", "line 1\n  line 2\n"),
		"/csv":       body("text/csv", "a,b\n1,2\n"),
		"/latin1":    body("text/plain; charset=ISO-8859-1", "caf\xe9"),
		"/cp1252":    body("text/plain; charset=windows-1252", "\x93quoted\x94 \x80"),
		"/nolabel":   body("text/plain", "caf\xe9"),
		"/utf16":     body("text/plain; charset=utf-16le", "\xff\xfeh\x00i\x00"),
		"/bom":       body("text/plain", "\xef\xbb\xbfbom"),
		"/metacs":    body("text/html", `<meta charset="iso-8859-1"><p>caf`+"\xe9"+`</p>`),
		"/sniffhtml": body("", `<!DOCTYPE html><p>sniffed</p>`),
		"/sniffpng":  body("", png),
		"/png":       body("image/png", png),
		"/svg":       body("image/svg+xml", `<svg/>`),
		"/pdf":       body("application/pdf", "%PDF-1.7"),
		"/zip":       body("application/zip", "PK\x03\x04"),
		"/octet":     body("application/octet-stream", "hello"),
		"/disguised": body("text/html", png),
		"/nul":       body("text/plain", "a\x00b"),
		"/sjis":      body("text/plain; charset=shift_jis", "\x82\xa0"),
		"/sjisascii": body("text/plain; charset=shift_jis", "plain ascii"),
		"/404":       func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "nope", http.StatusNotFound) },
		"/503":       func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) },
	}))
	f := newFetcher(t, testOptions())
	tests := []struct {
		path, want, ctype string
		kind              error
		status            int
	}{
		{path: "/html", want: "T\n\n# Head\n\nPara & more", ctype: "text/html"},
		{path: "/xhtml", want: "x", ctype: "application/xhtml+xml"},
		{path: "/json", want: `{"a": [1, 2], "b": "<p>not html</p>"}`, ctype: "application/json"},
		{path: "/ldjson", want: `{"@context": "x"}`, ctype: "application/ld+json"},
		{path: "/text", want: "line 1\n  line 2\n", ctype: "text/plain"},
		{path: "/csv", want: "a,b\n1,2\n", ctype: "text/csv"},
		{path: "/latin1", want: "café"},
		{path: "/cp1252", want: "\u201cquoted\u201d €"},
		{path: "/nolabel", want: "café"},
		{path: "/utf16", want: "hi"},
		{path: "/bom", want: "bom"},
		{path: "/metacs", want: "café"},
		{path: "/sniffhtml", want: "sniffed", ctype: "text/html"},
		{path: "/sniffpng", kind: ErrBinary},
		{path: "/png", kind: ErrBinary},
		{path: "/svg", kind: ErrBinary},
		{path: "/pdf", kind: ErrBinary},
		{path: "/zip", kind: ErrBinary},
		{path: "/octet", kind: ErrBinary},
		{path: "/disguised", kind: ErrBinary},
		{path: "/nul", kind: ErrBinary},
		{path: "/sjis", kind: ErrCharset},
		{path: "/sjisascii", want: "plain ascii"},
		{path: "/404", kind: ErrStatus, status: 404},
		{path: "/503", kind: ErrStatus, status: 503},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			doc, err := f.Fetch(context.Background(), srv.URL+tt.path)
			wantKind(t, err, tt.kind)
			if tt.kind != nil {
				var e *Error
				errors.As(err, &e)
				if e.Status != tt.status {
					t.Errorf("Status = %d, want %d", e.Status, tt.status)
				}
				return
			}
			if doc.Text != tt.want {
				t.Errorf("Text = %q, want %q", doc.Text, tt.want)
			}
			if tt.ctype != "" && doc.ContentType != tt.ctype {
				t.Errorf("ContentType = %q, want %q", doc.ContentType, tt.ctype)
			}
		})
	}
}

// TestFetchDocument: the metadata fields.
func TestFetchDocument(t *testing.T) {
	var gotHeaders http.Header
	srv := newServer(t, "", routes(map[string]func(http.ResponseWriter, *http.Request){
		"/start": func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/end", http.StatusFound) },
		"/end": func(w http.ResponseWriter, r *http.Request) {
			gotHeaders = r.Header.Clone()
			body("text/plain", "hello")(w, r)
		},
	}))
	at := time.Date(2026, 1, 31, 10, 30, 0, 0, time.UTC)
	opts := testOptions()
	opts.Now = func() time.Time { return at }
	f := newFetcher(t, opts)
	doc, err := f.Fetch(context.Background(), srv.URL+"/start#frag")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("hello"))
	want := Document{URL: srv.URL + "/end", RequestedURL: srv.URL + "/start", Status: 200, ContentType: "text/plain",
		Text: "hello", Bytes: 5, SHA256: hex.EncodeToString(sum[:]), RetrievedAt: at}
	if doc.URL != want.URL || doc.RequestedURL != want.RequestedURL || doc.Status != want.Status ||
		doc.ContentType != want.ContentType || doc.Text != want.Text || doc.Bytes != want.Bytes ||
		doc.SHA256 != want.SHA256 || !doc.RetrievedAt.Equal(at) || doc.Truncated ||
		len(doc.Redirects) != 1 || doc.Redirects[0] != want.URL {
		t.Errorf("got %+v\nwant %+v", *doc, want)
	}
	// No Referer naming the previous URL, no cookies or credentials.
	if gotHeaders.Get("User-Agent") != DefaultUserAgent {
		t.Errorf("User-Agent = %q", gotHeaders.Get("User-Agent"))
	}
	for _, h := range []string{"Referer", "Cookie", "Authorization"} {
		if gotHeaders.Get(h) != "" {
			t.Errorf("request carried %s: %q", h, gotHeaders.Get(h))
		}
	}
}

// TestFetchURLRefusals: schemes and URL shapes refused before any I/O.
func TestFetchURLRefusals(t *testing.T) {
	opts := testOptions()
	res := newResolver(map[string][]string{"example.com": {"127.0.0.1"}})
	opts.Resolver = res
	opts.Rules = fakeRules{allow: []string{"*"}}
	f := newFetcher(t, opts)
	tests := []struct {
		url  string
		kind error
	}{
		{"http://example.com/", ErrScheme}, // plain http for a host not in AllowHTTPHosts
		{"HTTP://example.com/", ErrScheme},
		{"ftp://example.com/", ErrScheme},
		{"gopher://127.0.0.1:70/", ErrScheme},
		{"file:///etc/passwd", ErrInvalidURL}, // no host
		{"file://localhost/etc/passwd", ErrScheme},
		{"javascript:alert(1)", ErrInvalidURL},
		{"data:text/plain,hi", ErrInvalidURL},
		{"/relative", ErrInvalidURL},
		{"https://user:pass@example.com/", ErrInvalidURL},
		{"https://example.com@127.0.0.1/", ErrInvalidURL},
		{"https://exa mple.com/", ErrInvalidURL},
		{"https://example.com/\x00", ErrInvalidURL},
		{"https://example.com/" + strings.Repeat("a", maxURLBytes), ErrInvalidURL},
		{"https:///nohost", ErrInvalidURL},
	}
	for _, tt := range tests {
		t.Run(tt.url[:min(len(tt.url), 40)], func(t *testing.T) {
			_, err := f.Fetch(context.Background(), tt.url)
			wantKind(t, err, tt.kind)
		})
	}
	if n := res.count("example.com"); n != 0 {
		t.Errorf("refused URLs caused %d lookups", n)
	}
}

// TestFetchHTTPS: https works with the configured roots (the default
// scheme needs no AllowHTTPHosts entry); an unknown CA is ErrUnavailable.
func TestFetchHTTPS(t *testing.T) {
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "secure") }))
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the unknown-CA case logs a handshake error
	ts.StartTLS()
	t.Cleanup(ts.Close)
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	opts := testOptions()
	opts.AllowHTTPHosts = nil
	opts.RootCAs = pool
	f := newFetcher(t, opts)
	doc, err := f.Fetch(context.Background(), ts.URL+"/")
	if err != nil || doc.Text != "secure" {
		t.Fatalf("https fetch: %v, %+v", err, doc)
	}
	opts.RootCAs = nil
	_, err = newFetcher(t, opts).Fetch(context.Background(), ts.URL+"/")
	wantKind(t, err, ErrUnavailable)
	// And http to the same host is now refused: it is not in AllowHTTPHosts.
	_, err = f.Fetch(context.Background(), strings.Replace(ts.URL, "https:", "http:", 1))
	wantKind(t, err, ErrScheme)
}

// TestFetchHostDenied: the rules' refusal is ErrHostDenied, wraps the
// rules' own error, and nothing is sent.
func TestFetchHostDenied(t *testing.T) {
	srv := newServer(t, "", http.NotFoundHandler())
	opts := testOptions()
	opts.Rules = fakeRules{allow: []string{"*"}, deny: []string{"127.0.0.1"}}
	_, err := newFetcher(t, opts).Fetch(context.Background(), srv.URL+"/")
	wantKind(t, err, ErrHostDenied)
	if !errors.Is(err, errRuleDenied) {
		t.Errorf("error does not wrap the rules' error: %v", err)
	}
	if n := srv.conns.Load(); n != 0 {
		t.Errorf("denied host got %d connections", n)
	}
}

// TestFetchRedirects: every hop is re-checked, and the count is capped.
func TestFetchRedirects(t *testing.T) {
	other := newServer(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "other") }))
	res := newResolver(map[string][]string{"denied.test": {"127.0.0.1"}})
	srv := newServer(t, "", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		if _, err := fmt.Sscanf(r.URL.Path, "/chain/%d", &n); err == nil {
			if n == 0 {
				fmt.Fprint(w, "end of chain")
				return
			}
			http.Redirect(w, r, fmt.Sprintf("/chain/%d", n-1), http.StatusMovedPermanently)
			return
		}
		to := map[string]string{
			"/denied":    "http://denied.test/",
			"/private":   other.URL + "/",
			"/file":      "file:///etc/passwd",
			"/downgrade": "http://localhost/",
			"/userinfo":  "http://x@127.0.0.1/",
			"/empty":     "",
			"/relative":  "chain/0",
		}[r.URL.Path]
		w.Header().Set("Location", to)
		w.WriteHeader(http.StatusTemporaryRedirect)
	}))
	opts := testOptions()
	opts.Resolver = res
	opts.AllowPrivate = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	opts.AllowHTTPHosts = []string{"127.0.0.1", "127.0.0.2", "denied.test"}
	opts.Rules = fakeRules{allow: []string{"127.0.0.1", "127.0.0.2"}}
	f := newFetcher(t, opts)
	tests := []struct {
		path  string
		kind  error
		hops  int
		maxRe int
	}{
		{path: "/chain/5", hops: 5},
		{path: "/chain/6", kind: ErrTooManyRedirects},
		{path: "/chain/1", kind: ErrTooManyRedirects, maxRe: -1},
		{path: "/chain/2", hops: 2, maxRe: 2},
		{path: "/relative", hops: 1},
		{path: "/denied", kind: ErrHostDenied},
		{path: "/private", kind: ErrPrivateAddress},
		{path: "/file", kind: ErrInvalidURL},
		{path: "/downgrade", kind: ErrScheme},
		{path: "/userinfo", kind: ErrInvalidURL},
		{path: "/empty", kind: ErrStatus},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			ff := f
			if tt.maxRe != 0 {
				o := opts
				o.MaxRedirects = tt.maxRe
				ff = newFetcher(t, o)
			}
			doc, err := ff.Fetch(context.Background(), srv.URL+tt.path)
			wantKind(t, err, tt.kind)
			if err == nil && len(doc.Redirects) != tt.hops {
				t.Errorf("Redirects = %v, want %d hops", doc.Redirects, tt.hops)
			}
		})
	}
	if n := res.count("denied.test"); n != 0 {
		t.Errorf("a denied redirect target was resolved %d times", n)
	}
	if n := other.conns.Load(); n != 0 {
		t.Errorf("the private redirect target got %d connections", n)
	}
}

// TestFetchPrivateAddress: without AllowPrivate, loopback is refused at
// connect time whether named as a literal, by a resolver, or in IPv6 or
// IPv4-mapped form, and the agent-visible message never names the address.
func TestFetchPrivateAddress(t *testing.T) {
	v4 := newServer(t, "", http.NotFoundHandler())
	v6 := newServer(t, "[::1]:0", http.NotFoundHandler())
	port := v4.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port()
	res := newResolver(map[string][]string{
		"internal.test": {"127.0.0.1"},
		"mapped.test":   {"::ffff:127.0.0.1"},
		"mixed.test":    {"127.0.0.1,::1"},
	})
	opts := testOptions()
	opts.AllowPrivate = nil
	opts.Resolver = res
	opts.Rules = fakeRules{allow: []string{"*"}}
	opts.AllowHTTPHosts = []string{"127.0.0.1", "::1", "internal.test", "mapped.test", "mixed.test"}
	f := newFetcher(t, opts)
	for _, u := range []string{
		v4.URL + "/",
		v6.URL + "/",
		fmt.Sprintf("http://internal.test:%d/", port),
		fmt.Sprintf("http://mapped.test:%d/", port),
		fmt.Sprintf("http://mixed.test:%d/", port),
	} {
		t.Run(u, func(t *testing.T) {
			_, err := f.Fetch(context.Background(), u)
			wantKind(t, err, ErrPrivateAddress)
			if v := Violation(err); strings.Contains(v.Public(), "127.0.0.1") && !strings.Contains(u, "127.0.0.1") {
				t.Errorf("public message leaks the resolved address: %s", v.Public())
			}
		})
	}
	if n := v4.conns.Load() + v6.conns.Load(); n != 0 {
		t.Errorf("refused fetches reached the servers: %d connections", n)
	}
}

// TestFetchRebinding: a name that resolves to an allowed address and then,
// on the next connection, to a forbidden one is stopped at connect time.
// The resolver is the injected one, so the check cannot be a lookup of its
// own that gets a different answer.
func TestFetchRebinding(t *testing.T) {
	good := newServer(t, "", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "fine") }))
	goodPort := good.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port()
	// The name carries one port, so the forbidden server listens on the
	// same port number at 127.0.0.2.
	evil := newServer(t, fmt.Sprintf("127.0.0.2:%d", goodPort), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "secret") }))
	res := newResolver(map[string][]string{"rebind.test": {"127.0.0.1", "127.0.0.2"}})
	opts := testOptions()
	opts.Resolver = res
	opts.AllowPrivate = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")} // 127.0.0.2 stands for "private"
	opts.AllowHTTPHosts = []string{"rebind.test"}
	opts.Rules = fakeRules{allow: []string{"rebind.test"}}
	f := newFetcher(t, opts)
	u := fmt.Sprintf("http://rebind.test:%d/", goodPort)
	doc, err := f.Fetch(context.Background(), u)
	if err != nil || doc.Text != "fine" {
		t.Fatalf("first fetch: %v", err)
	}
	f.CloseIdleConnections() // force a new connection, hence a new lookup
	_, err = f.Fetch(context.Background(), u)
	wantKind(t, err, ErrPrivateAddress)
	if n := evil.conns.Load(); n != 0 {
		t.Errorf("rebinding reached the forbidden address: %d connections", n)
	}
	if n := res.count("rebind.test"); n != 2 {
		t.Errorf("lookups = %d, want 2 (one per connection)", n)
	}
}

// TestFetchIPRules: a HostRules that also has CheckIP is consulted at
// connect time, after the address ranges.
func TestFetchIPRules(t *testing.T) {
	srv := newServer(t, "", http.NotFoundHandler())
	opts := testOptions()
	opts.Rules = ipRules{fakeRules: fakeRules{allow: []string{"127.0.0.1"}}, denyIP: []netip.Addr{netip.MustParseAddr("127.0.0.1")}}
	_, err := newFetcher(t, opts).Fetch(context.Background(), srv.URL+"/")
	wantKind(t, err, ErrHostDenied)
	if !errors.Is(err, errRuleDenied) || srv.conns.Load() != 0 {
		t.Errorf("err = %v, conns = %d", err, srv.conns.Load())
	}
}

// TestFetchBodyCap: the cap holds for a streamed body, a truthful or lying
// Content-Length, and a gzip bomb (the cap counts decompressed bytes).
func TestFetchBodyCap(t *testing.T) {
	const limit = 1000
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(bytes.Repeat([]byte("a"), 1<<20))
	zw.Close()
	srv := newServer(t, "", routes(map[string]func(http.ResponseWriter, *http.Request){
		"/exact": body("text/plain", strings.Repeat("a", limit)),
		"/over": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			for range 10 { // chunked, no Content-Length
				fmt.Fprint(w, strings.Repeat("b", limit/5))
				w.(http.Flusher).Flush()
			}
		},
		"/announced": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Length", "100000000")
			fmt.Fprint(w, "short")
		},
		"/bomb": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(bomb.Bytes())
		},
		"/multibyte": body("text/plain; charset=utf-8", strings.Repeat("é", limit)),
	}))
	opts := testOptions()
	opts.MaxBodyBytes = limit
	f := newFetcher(t, opts)
	for _, tt := range []struct {
		path string
		kind error
	}{{"/exact", nil}, {"/over", ErrTooLarge}, {"/announced", ErrTooLarge}, {"/bomb", ErrTooLarge}} {
		t.Run(tt.path, func(t *testing.T) {
			_, err := f.Fetch(context.Background(), srv.URL+tt.path)
			wantKind(t, err, tt.kind)
		})
	}
	t.Run("AllowTruncate", func(t *testing.T) {
		o := opts
		o.AllowTruncate = true
		ft := newFetcher(t, o)
		doc, err := ft.Fetch(context.Background(), srv.URL+"/over")
		if err != nil || !doc.Truncated || len(doc.Text) != limit || doc.Bytes != limit {
			t.Fatalf("err %v, doc %+v", err, doc)
		}
		// A cut inside a multi-byte character drops the partial character.
		doc, err = ft.Fetch(context.Background(), srv.URL+"/multibyte")
		if err != nil || !doc.Truncated || doc.Text != strings.Repeat("é", limit/2) {
			t.Fatalf("err %v, text %q…", err, doc.Text[:min(10, len(doc.Text))])
		}
	})
}

// TestFetchTimeout: a body that stalls past the timeout is ErrTimeout, and
// the fetch returns promptly.
func TestFetchTimeout(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := newServer(t, "", routes(map[string]func(http.ResponseWriter, *http.Request){
		"/slowbody": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprint(w, "first part")
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-release:
			}
		},
		"/slowheaders": func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		},
	}))
	opts := testOptions()
	opts.Timeout = 300 * time.Millisecond
	f := newFetcher(t, opts)
	for _, p := range []string{"/slowbody", "/slowheaders"} {
		t.Run(p, func(t *testing.T) {
			// The handler never finishes on its own: only the timeout can
			// end the fetch, so ErrTimeout is the verdict (not how long).
			_, err := f.Fetch(context.Background(), srv.URL+p)
			wantKind(t, err, ErrTimeout)
		})
	}
}

// TestFetchIgnoresProxyEnv: HTTP(S)_PROXY in the environment is never
// used; a proxy would be the address checked instead of the target.
func TestFetchIgnoresProxyEnv(t *testing.T) {
	proxy := newServer(t, "", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "via proxy") }))
	srv := newServer(t, "", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "direct") }))
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("HTTPS_PROXY", proxy.URL)
	t.Setenv("NO_PROXY", "")
	// A name, not 127.0.0.1: Go's environment proxy never proxies loopback
	// literals, which would make this test pass for the wrong reason.
	opts := testOptions()
	opts.Resolver = newResolver(map[string][]string{"direct.test": {"127.0.0.1"}})
	opts.AllowHTTPHosts = []string{"direct.test"}
	opts.Rules = fakeRules{allow: []string{"direct.test"}}
	port := srv.Listener.Addr().(interface{ AddrPort() netip.AddrPort }).AddrPort().Port()
	doc, err := newFetcher(t, opts).Fetch(context.Background(), fmt.Sprintf("http://direct.test:%d/", port))
	if err != nil || doc.Text != "direct" || proxy.conns.Load() != 0 {
		t.Fatalf("err %v, doc %+v, proxy conns %d", err, doc, proxy.conns.Load())
	}
}

func TestNewFetcherValidates(t *testing.T) {
	for name, mut := range map[string]func(*FetchOptions){
		"nil rules":      func(o *FetchOptions) { o.Rules = nil },
		"negative body":  func(o *FetchOptions) { o.MaxBodyBytes = -1 },
		"negative time":  func(o *FetchOptions) { o.Timeout = -1 },
		"wildcard http":  func(o *FetchOptions) { o.AllowHTTPHosts = []string{"*.example.com"} },
		"empty http":     func(o *FetchOptions) { o.AllowHTTPHosts = []string{" "} },
		"bad prefix":     func(o *FetchOptions) { o.AllowPrivate = []netip.Prefix{{}} },
		"ua newline":     func(o *FetchOptions) { o.UserAgent = "x\r\nEvil: 1" },
		"ua no token":    func(o *FetchOptions) { o.UserAgent = "/1.0" },
		"http host port": func(o *FetchOptions) { o.AllowHTTPHosts = []string{"example.com:80"} },
	} {
		t.Run(name, func(t *testing.T) {
			o := testOptions()
			mut(&o)
			if _, err := NewFetcher(o); err == nil {
				t.Error("NewFetcher accepted invalid options")
			}
		})
	}
}
