package urlnorm_test

import (
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/urlnorm"
)

func TestHost(t *testing.T) {
	for in, want := range map[string]string{
		"API.Example.com": "api.example.com",
		"a-b.example":     "a-b.example",
		"203.0.114.9":     "203.0.114.9",
		"2001:DB8::1":     "2001:db8::1",
		"x1.example.9a":   "x1.example.9a",
	} {
		if got, err := urlnorm.Host(in); err != nil || got != want {
			t.Errorf("Host(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "*.example.com", "a..b", "example.com.", "-a.example", "a_b.example", "a%2eb",
		"127.1", "2130706433", "0x7f.1", "1.2.3.0x4", "fe80::1%eth0", "::ffff:127.0.0.1", "example.123", "https://a.example"} {
		if got, err := urlnorm.Host(in); !errors.Is(err, urlnorm.ErrInvalid) {
			t.Errorf("Host(%q) = %q, %v; want ErrInvalid", in, got, err)
		}
	}
}
