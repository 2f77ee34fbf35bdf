package testidp

import (
	"net"
	"testing"
)

// StartForTest serves a provider with clients on a fresh loopback port
// until the test ends; a provider that does not start fails the test.
// Every Go test that needs an authorization server starts it here, so
// none of them can bind it anywhere but loopback.
func StartForTest(t testing.TB, clients []Client) *IdP {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(ln, clients)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}
