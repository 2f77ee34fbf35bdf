package comm

import (
	"errors"
	"net/netip"
	"testing"
)

// TestBlockedAddr covers every refused range, the forms that smuggle one
// inside another (IPv4-mapped, NAT64, 6to4), and public addresses that must
// stay reachable. Pure: no socket is opened.
func TestBlockedAddr(t *testing.T) {
	blocked := []string{
		"0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.255", "100.64.0.1", "100.127.255.254",
		"127.0.0.1", "127.1.2.3", "169.254.169.254", "169.254.0.1", "172.16.0.1", "172.31.255.255",
		"192.0.0.192", "192.0.2.1", "192.88.99.1", "192.168.1.1", "198.18.0.1", "198.51.100.1", "203.0.113.1",
		"224.0.0.1", "239.255.255.250", "240.0.0.1", "255.255.255.255",
		"::", "::1", "::127.0.0.1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "::ffff:10.0.0.1",
		"64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "64:ff9b:1::1", "2002:a9fe:a9fe::1", "2002:7f00:1::",
		"2001::1", "2001:db8::1", "100::1", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "febf::1", "fec0::1",
		"ff02::1", "ff05::1:3",
	}
	public := []string{
		"1.1.1.1", "8.8.8.8", "93.184.216.34", "100.63.255.255", "100.128.0.0", "172.15.255.255", "172.32.0.0",
		"192.169.0.1", "198.20.0.1", "223.255.255.255", "169.253.255.255",
		"2606:4700:4700::1111", "2a00:1450:4001::1", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1",
	}
	for _, s := range blocked {
		if !blockedAddr(netip.MustParseAddr(s)) {
			t.Errorf("%s not blocked", s)
		}
	}
	for _, s := range public {
		if blockedAddr(netip.MustParseAddr(s)) {
			t.Errorf("%s blocked", s)
		}
	}
	if !blockedAddr(netip.Addr{}) {
		t.Error("the zero Addr is not blocked")
	}
}

// TestControlRefuses calls the dialer's Control hook directly with the
// addresses the kernel would be asked to connect to, so ranges that must
// never see a packet in a test (metadata, RFC 1918) are covered without one.
func TestControlRefuses(t *testing.T) {
	g := &guard{allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	tests := []struct {
		addr string
		kind error
	}{
		{"169.254.169.254:80", ErrPrivateAddress},
		{"[fd00:ec2::254]:80", ErrPrivateAddress},
		{"[::ffff:169.254.169.254]:80", ErrPrivateAddress},
		{"[64:ff9b::a9fe:a9fe]:80", ErrPrivateAddress},
		{"10.0.0.1:443", ErrPrivateAddress},
		{"100.100.100.200:80", ErrPrivateAddress},
		{"[fe80::1%eth0]:80", ErrPrivateAddress},
		{"0.0.0.0:80", ErrPrivateAddress},
		{"[::]:80", ErrPrivateAddress},
		{"[::1]:80", ErrPrivateAddress}, // ::1 is not in the allowed 127.0.0.0/8
		{"garbage", ErrPrivateAddress},  // unreadable: fail closed
		{"127.0.0.1:80", nil},           // allowed by AllowPrivate
		{"[::ffff:127.0.0.1]:80", nil},  // mapped form of an allowed address
		{"93.184.216.34:443", nil},
		{"[2606:4700:4700::1111]:443", nil},
	}
	for _, tt := range tests {
		err := g.control("tcp", tt.addr, nil)
		if tt.kind == nil {
			if err != nil {
				t.Errorf("%s: %v", tt.addr, err)
			}
			continue
		}
		if !errors.Is(err, tt.kind) {
			t.Errorf("%s: err = %v, want %v", tt.addr, err, tt.kind)
		}
	}
	// IPRules sees what the ranges let through, and can refuse it.
	g.rules = ipRules{denyIP: []netip.Addr{netip.MustParseAddr("93.184.216.34")}}
	if err := g.control("tcp", "93.184.216.34:443", nil); !errors.Is(err, ErrHostDenied) || !errors.Is(err, errRuleDenied) {
		t.Errorf("IPRules refusal: %v", err)
	}
}
