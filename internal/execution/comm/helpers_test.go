package comm

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// errRuleDenied is the fake policy's own sentinel, to check that
// ErrHostDenied wraps the rules' error.
var errRuleDenied = errors.New("fake policy: denied")

// fakeRules allows the listed host names ("*" for any) unless denied.
type fakeRules struct {
	allow []string
	deny  []string
}

func (r fakeRules) CheckURL(u *url.URL) error {
	h := u.Hostname()
	if slices.Contains(r.deny, h) {
		return fmt.Errorf("host %q is in deny_hosts: %w", h, errRuleDenied)
	}
	if slices.Contains(r.allow, "*") || slices.Contains(r.allow, h) {
		return nil
	}
	return fmt.Errorf("host %q is not in allow_hosts: %w", h, errRuleDenied)
}

// ipRules adds a CheckIP that refuses the listed addresses.
type ipRules struct {
	fakeRules
	denyIP []netip.Addr
}

func (r ipRules) CheckIP(a netip.Addr) error {
	if slices.Contains(r.denyIP, a) {
		return fmt.Errorf("address %s denied: %w", a, errRuleDenied)
	}
	return nil
}

// fakeResolver answers from a table; answers[name] is used in turn, the
// last one repeating, so a test can make a name change its answer
// (rebinding). It counts lookups.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	calls   map[string]int
}

func newResolver(answers map[string][]string) *fakeResolver {
	r := &fakeResolver{answers: map[string][][]netip.Addr{}, calls: map[string]int{}}
	for name, seq := range answers {
		for _, s := range seq {
			var addrs []netip.Addr
			for _, a := range strings.Split(s, ",") {
				addrs = append(addrs, netip.MustParseAddr(a))
			}
			r.answers[name] = append(r.answers[name], addrs)
		}
	}
	return r
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seq, ok := r.answers[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	i := min(r.calls[host], len(seq)-1)
	r.calls[host]++
	return seq[i], nil
}

func (r *fakeResolver) count(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

// server is an httptest server that counts accepted connections, so a test
// can prove a refused fetch never reached it.
type server struct {
	*httptest.Server
	conns atomic.Int64
}

// newServer starts h on addr ("127.0.0.1:0", "127.0.0.2:0", "[::1]:0"),
// always loopback.
func newServer(t *testing.T, addr string, h http.Handler) *server {
	t.Helper()
	s := &server{Server: httptest.NewUnstartedServer(h)}
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Skipf("cannot listen on %s: %v", addr, err)
		}
		s.Listener.Close()
		s.Listener = l
	}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

// recorder is a list of strings that handlers and rules running on other
// goroutines append to: what a test server was asked for, what the rules
// were asked about.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, s)
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = nil
}

// list is a copy of what was added since the last reset.
func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// loopback is AllowPrivate for tests that may reach the test servers.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// testOptions allow plain http and connections to 127.0.0.1 only, and
// robots.txt off; tests change what they exercise.
func testOptions() FetchOptions {
	return FetchOptions{
		Rules:          fakeRules{allow: []string{"127.0.0.1"}},
		AllowHTTPHosts: []string{"127.0.0.1"},
		AllowPrivate:   loopback,
		IgnoreRobots:   true,
		Resolver:       newResolver(nil),
	}
}

func newFetcher(t *testing.T, opts FetchOptions) *Fetcher {
	t.Helper()
	f, err := NewFetcher(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.CloseIdleConnections)
	return f
}

// wantKind fails unless err is an *Error of the given kind (nil kind: no
// error).
func wantKind(t *testing.T, err, kind error) {
	t.Helper()
	if kind == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, kind) {
		t.Fatalf("error = %v, want *Error of kind %q", err, kind)
	}
}

// routes builds a handler from path → (content type, body); a nil content
// type slice entry means "send no Content-Type at all".
func routes(m map[string]func(w http.ResponseWriter, r *http.Request)) http.Handler {
	mux := http.NewServeMux()
	for p, h := range m {
		mux.HandleFunc(p, h)
	}
	return mux
}

func body(ctype, s string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		if ctype == "" {
			w.Header()["Content-Type"] = nil // stop net/http from sniffing one
		} else {
			w.Header().Set("Content-Type", ctype)
		}
		fmt.Fprint(w, s)
	}
}
