package origin

import (
	"errors"
	"testing"
)

func TestList(t *testing.T) {
	def, err := NewList(nil)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := NewList([]string{"https://App.Example:443", "http://tools.example:8080"})
	if err != nil {
		t.Fatal(err)
	}
	both, _ := NewList([]string{Loopback, "https://app.example"})
	cases := []struct {
		origin               string
		def, listed, andLoop bool
	}{
		{"", true, true, true},
		{"http://localhost:6274", true, false, true},
		{"http://127.0.0.1", true, false, true},
		{"http://127.9.9.9:1", true, false, true},
		{"http://[::1]:3000", true, false, true},
		{"https://dev.localhost", true, false, true},
		{"http://evil.example", false, false, false},
		{"http://localhost.evil.example", false, false, false},
		{"http://127.0.0.1.nip.io", false, false, false},
		{"null", false, false, false},
		{"file://", false, false, false},
		{"ws://localhost", false, false, false},
		{"https://app.example", false, true, true},
		{"HTTPS://APP.EXAMPLE", false, true, true},
		{"https://app.example:8443", false, false, false},
		{"http://app.example", false, false, false},
		{"http://tools.example:8080", false, true, false},
		{"https://app.example/path", false, false, false},
		{"https://user@app.example", false, false, false},
		{"%%%", false, false, false},
	}
	for _, tc := range cases {
		if got := def.Allowed(tc.origin); got != tc.def {
			t.Errorf("default Allowed(%q) = %v", tc.origin, got)
		}
		if got := listed.Allowed(tc.origin); got != tc.listed {
			t.Errorf("listed Allowed(%q) = %v", tc.origin, got)
		}
		if got := both.Allowed(tc.origin); got != tc.andLoop {
			t.Errorf("loopback+list Allowed(%q) = %v", tc.origin, got)
		}
	}
	for _, bad := range []string{"*", "app.example", "https://app.example/x", "ftp://x", ""} {
		if _, err := NewList([]string{bad}); !errors.Is(err, ErrInvalid) {
			t.Errorf("NewList(%q) = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestIsLoopbackAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080": true, "[::1]:0": true, "localhost:9000": true, "127.0.0.2:1": true,
		":8080": false, "0.0.0.0:80": false, "[::]:80": false, "10.0.0.1:80": false, "example.com:80": false,
	} {
		if got := IsLoopbackAddr(addr); got != want {
			t.Errorf("IsLoopbackAddr(%q) = %v", addr, got)
		}
	}
}

func FuzzOriginAllowed(f *testing.F) {
	for _, s := range []string{"", "null", "http://localhost:1", "https://app.example", "http://[::1]", "http://127.0.0.1.evil", "HTTP://LOCALHOST"} {
		f.Add(s)
	}
	def, _ := NewList(nil)
	listed, _ := NewList([]string{"https://app.example"})
	f.Fuzz(func(t *testing.T, origin string) {
		if def.Allowed(origin) && origin != "" {
			norm, ok := normalOrigin(origin)
			if !ok || !isLoopbackHost(hostOf(norm)) {
				t.Fatalf("default list admitted non-loopback %q", origin)
			}
		}
		if listed.Allowed(origin) && origin != "" {
			if norm, _ := normalOrigin(origin); norm != "https://app.example" {
				t.Fatalf("list admitted %q (%q)", origin, norm)
			}
		}
	})
}
