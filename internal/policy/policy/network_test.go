package policy

import (
	"errors"
	"net/netip"
	"net/url"
	"testing"
)

func TestCheckURL(t *testing.T) {
	p := mustCompile(t, Spec{Network: NetworkSpec{
		AllowHosts:   []string{"*.example.org", "api.test", "10.1.2.3", "Mixed.Case.test", "localhost"},
		DenyHosts:    []string{"evil.example.org", "*.bad.example.org"},
		AllowPrivate: []string{"10.1.0.0/16"},
	}})
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://docs.example.org/x", true},
		{"https://a.b.example.org/x", true},
		{"https://DOCS.EXAMPLE.ORG/x", true},
		{"https://docs.example.org./x", true}, // trailing dot is the same host
		{"https://example.org/", false},       // *.example.org is subdomains only
		{"https://notexample.org/", false},
		{"https://example.org.evil.test/", false},
		{"https://api.test:8443/v1", true},
		{"https://api.test.evil/", false},
		{"https://mixed.case.test/", true},
		{"http://docs.example.org/", false}, // default schemes: https only
		{"ftp://docs.example.org/", false},
		{"https://evil.example.org/", false}, // deny overrides allow
		{"https://EVIL.example.org./", false},
		{"https://x.bad.example.org/", false},
		{"https://user:pw@docs.example.org/", false},
		{"https://docs.example.org@evil.test/", false},
		{"https:///nohost", false},
		{"https:docs.example.org", false},
		{"https://10.1.2.3/", true},           // private, but within allow_private and listed
		{"https://10.2.0.1/", false},          // private, not within allow_private
		{"https://127.0.0.1/", false},         // loopback
		{"https://[::1]/", false},             // loopback v6
		{"https://[::ffff:10.2.0.1]/", false}, // v4-mapped private
		{"https://169.254.169.254/", false},   // link-local: cloud metadata
		{"https://100.64.0.1/", false},        // CGNAT
		{"https://0.0.0.0/", false},
		{"https://localhost/", false},  // listed, but loopback and not within allow_private
		{"https://127.1/", false},      // legacy numeric form
		{"https://2130706433/", false}, // 127.0.0.1 as an integer
		{"https://0x7f.0.0.1/", false},
		{"https://8.8.8.8/", false}, // public, but not listed
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			u, err := url.Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			err = p.CheckURL(u)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckURL(%s) = %v, want ok=%v", tc.url, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrNetworkDenied) {
				t.Fatalf("err %v is not ErrNetworkDenied", err)
			}
		})
	}
	if err := p.CheckURL(nil); !errors.Is(err, ErrNetworkDenied) {
		t.Fatalf("nil URL: %v", err)
	}
}

func TestEmptyAllowHostsAllowsNothing(t *testing.T) {
	p := mustCompile(t, Spec{Allow: []string{"comm.fetch"}})
	u, _ := url.Parse("https://example.org/")
	if err := p.CheckURL(u); !errors.Is(err, ErrNetworkDenied) {
		t.Fatalf("CheckURL = %v", err)
	}
	d := p.Decide(&Input{Capability: "comm.fetch", Args: map[string]any{"url": "https://example.org/"}})
	if d.Effect != Deny || d.RuleID != "network" {
		t.Fatalf("Decide = %+v", d)
	}
	// A comm call without a URL is not a network question.
	if d := p.Decide(&Input{Capability: "comm.fetch"}); d.Effect != Allow {
		t.Fatalf("Decide without URL = %+v", d)
	}
	// Nor is a non-comm call that happens to carry one.
	q := mustCompile(t, Spec{Allow: []string{"pool.read"}})
	if d := q.Decide(&Input{Capability: "pool.read", Args: map[string]any{"url": "https://x/"}}); d.Effect != Allow {
		t.Fatalf("pool.read with a url arg = %+v", d)
	}
}

func TestDecideRefusesUnparsableURL(t *testing.T) {
	p := mustCompile(t, Spec{Allow: []string{"comm.*"}, Network: NetworkSpec{AllowHosts: []string{"*"}}})
	for _, raw := range []string{"%zz", "https://a b/", "http://[::1"} {
		if d := p.Decide(&Input{Capability: "comm.fetch", Args: map[string]any{"url": raw}}); d.Effect != Deny || d.RuleID != "network" {
			t.Errorf("%q: %+v", raw, d)
		}
	}
	u, _ := url.Parse("https://anything.test/")
	if err := p.CheckURL(u); err != nil {
		t.Fatalf("* allows any host: %v", err)
	}
}

func TestCheckIP(t *testing.T) {
	p := mustCompile(t, Spec{Network: NetworkSpec{AllowHosts: []string{"*"}, DenyHosts: []string{"203.0.113.9"}, AllowPrivate: []string{"192.168.1.0/24", "fd00::/8"}}})
	tests := []struct {
		addr string
		ok   bool
	}{
		{"93.184.216.34", true},
		{"192.168.1.20", true},
		{"192.168.2.20", false},
		{"10.0.0.1", false},
		{"127.0.0.1", false},
		{"::1", false},
		{"fd00::1", true},
		{"fe80::1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:192.168.1.5", true},
		{"224.0.0.1", false},
		{"203.0.113.9", false},
		{"0.0.0.0", false},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			err := p.CheckIP(netip.MustParseAddr(tc.addr))
			if (err == nil) != tc.ok {
				t.Fatalf("CheckIP(%s) = %v, want ok=%v", tc.addr, err, tc.ok)
			}
		})
	}
	if err := p.CheckIP(netip.Addr{}); err == nil {
		t.Fatal("zero Addr allowed")
	}
}

func TestHostCovers(t *testing.T) {
	tests := []struct {
		p, q string
		want bool
	}{
		{"*", "*", true},
		{"*", "a.test", true},
		{"*.test", "*", false},
		{"*.example.org", "*.example.org", true},
		{"*.example.org", "*.docs.example.org", true},
		{"*.example.org", "docs.example.org", true},
		{"*.example.org", "example.org", false},
		{"*.example.org", "*.xexample.org", false},
		{"*.example.org", "xexample.org", false},
		{"docs.example.org", "*.docs.example.org", false},
		{"a.test", "a.test", true},
		{"a.test", "b.test", false},
		{"10.0.0.1", "10.0.0.1", true},
	}
	for _, tc := range tests {
		p, err := parseHost(tc.p)
		if err != nil {
			t.Fatal(err)
		}
		q, err := parseHost(tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.covers(q); got != tc.want {
			t.Errorf("%q covers %q = %v, want %v", tc.p, tc.q, got, tc.want)
		}
	}
}

func TestFilesystem(t *testing.T) {
	p := mustCompile(t, Spec{Filesystem: FilesystemSpec{Read: []string{"pools", "/data/shared/"}, Write: []string{"out/reports"}}})
	tests := []struct {
		op   string
		path string
		ok   bool
	}{
		{"read", "pools", true},
		{"read", "pools/sales/a.csv", true},
		{"read", "pools/../pools/a", true}, // cleaned first
		{"read", "poolsx/a", false},
		{"read", "pools/../secret", false},
		{"read", "../pools/a", false},
		{"read", "/data/shared/x", true},
		{"read", "/data/sharedx", false},
		{"read", "/data", false},
		{"read", "", false},
		{"read", "pools/a\x00b", false},
		{"write", "out/reports/q1.csv", true},
		{"write", "out/other.csv", false},
		{"write", "pools/a", false},
	}
	for _, tc := range tests {
		t.Run(tc.op+" "+tc.path, func(t *testing.T) {
			check := p.CheckRead
			if tc.op == "write" {
				check = p.CheckWrite
			}
			err := check(tc.path)
			if (err == nil) != tc.ok {
				t.Fatalf("%s %q = %v, want ok=%v", tc.op, tc.path, err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrPathDenied) {
				t.Fatalf("err %v is not ErrPathDenied", err)
			}
		})
	}
	empty := mustCompile(t, Spec{})
	if empty.CheckRead("a") == nil || empty.CheckWrite("a") == nil {
		t.Fatal("empty lists allow a path")
	}
	all := mustCompile(t, Spec{Filesystem: FilesystemSpec{Read: []string{"."}, Write: []string{"/"}}})
	if all.CheckRead("a/b") != nil || all.CheckRead("/abs") == nil || all.CheckWrite("/x/y") != nil || all.CheckWrite("rel") == nil {
		t.Fatal(`"." should cover relative paths and "/" absolute ones`)
	}
	r, w := p.Filesystem()
	if len(r) != 2 || r[1] != "/data/shared" || len(w) != 1 {
		t.Fatalf("Filesystem() = %v, %v", r, w)
	}
}
