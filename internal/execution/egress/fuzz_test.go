package egress_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/egress"
	"github.com/airlock-dev/airlock/internal/kit/urlnorm"
)

// FuzzParseTarget: whatever a sandboxed upstream sends as a proxy request
// head, ParseTarget never panics, and what it accepts is one canonical
// destination: a host that normalises to itself, a port in range, and for
// a forwarded request a URL in urlnorm's normal form naming that host.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{
		"CONNECT allowed.example:443 HTTP/1.1\r\n\r\n",
		"CONNECT [::1]:443 HTTP/1.1\r\n\r\n",
		"GET http://[::ffff:127.0.0.1]/ HTTP/1.1\r\n\r\n",
		"CONNECT 127.0.0.1:0443 HTTP/1.1\r\n\r\n",
		"CONNECT allowed.example HTTP/1.1\r\n\r\n",
		"CONNECT http://allowed.example:443/ HTTP/1.1\r\n\r\n",
		"GET http://allowed.example/a/../b?q=1 HTTP/1.1\r\nHost: evil\r\n\r\n",
		"GET http://ALLOWED.example:8080/%2e%2e/x HTTP/1.1\r\n\r\n",
		"GET http://0x7f.1/ HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: allowed.example\r\n\r\n",
		"GET https://allowed.example/ HTTP/1.1\r\n\r\n",
		"CONNECT a..b:443 HTTP/1.1\r\n\r\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, head string) {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(head)))
		if err != nil {
			return
		}
		p, err := egress.ParseTarget(req)
		if err != nil {
			return
		}
		if h, err := egress.NormalHost(p.Host); err != nil || h != p.Host {
			t.Fatalf("host %q is not canonical (%q, %v)", p.Host, h, err)
		}
		if p.Port < 1 || p.Port > 65535 {
			t.Fatalf("port %d", p.Port)
		}
		if !p.Tunnel {
			n, err := urlnorm.Normalize(p.URL.String())
			if err != nil || n != p.URL.String() || p.URL.Scheme != "http" || p.URL.Hostname() != p.Host {
				t.Fatalf("URL %q (host %q) not in normal form: %q %v", p.URL, p.Host, n, err)
			}
		}
	})
}
