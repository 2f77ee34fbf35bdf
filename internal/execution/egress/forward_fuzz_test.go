package egress

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// FuzzForwardIsOneRequest: whatever a sandboxed upstream sends as a
// forwarded (absolute-form http://) request, what the proxy writes to the
// origin it dialled — the judged host and port — is exactly one request,
// read back by net/http as:
//
//   - one head naming the judged host and port in Host, and the judged
//     normal-form path and query as its target;
//   - no hop-by-hop header (Proxy-Authorization and kin) and
//     "Connection: close";
//   - a body that is byte for byte the one the proxy read from the client;
//   - nothing after it: no second request (a smuggled request for
//     another virtual host on the same address) and no stray bytes.
//
// A forward that fails part-way may have written a prefix of that one
// request, never anything else.
func FuzzForwardIsOneRequest(f *testing.F) {
	for _, s := range []string{
		"GET http://allowed.example/a/../b?q=1 HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		"POST http://allowed.example:8080/x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
		"POST http://allowed.example/x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\nGET http://evil.example/ HTTP/1.1\r\n\r\n",
		"POST http://allowed.example/ HTTP/1.1\r\nContent-Length: 0\r\n\r\nGET / HTTP/1.1\r\nHost: evil.example\r\n\r\n",
		"POST http://allowed.example/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n1\r\na\r\n0\r\nX-T: v\r\n\r\n",
		"GET http://allowed.example/ HTTP/1.1\r\nProxy-Authorization: Basic c2VjcmV0\r\nConnection: keep-alive, X-Drop\r\nX-Drop: 1\r\nUpgrade: h2c\r\nKeep-Alive: 5\r\nTe: trailers\r\n\r\n",
		"GET http://allowed.example/ HTTP/1.0\r\nProxy-Connection: keep-alive\r\nX-A: a\r\n b\r\n\r\n",
		"PUT http://[2001:db8::1]:81/%7Efoo HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabcdef",
		"POST http://allowed.example/ HTTP/1.1\r\nContent-Length: 9\r\n\r\nshort",
		"GET http://allowed.example/?a=%0D%0AHost:%20evil HTTP/1.1\r\nUser-Agent: x\r\n\r\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		req, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		p, err := ParseTarget(req)
		if err != nil || p.Tunnel {
			return
		}
		var sent bytes.Buffer // what the proxy read of the client's body
		req.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(req.Body, &sent), req.Body}
		var out bytes.Buffer
		ferr := forward(req, p, &out)

		r2, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(out.Bytes())))
		if err != nil {
			if ferr == nil {
				t.Fatalf("forwarded bytes do not read as a request: %v\n%q", err, out.Bytes())
			}
			return // a prefix of the head; checked below by the full read
		}
		wantHost := p.Host
		if strings.Contains(wantHost, ":") {
			wantHost = "[" + wantHost + "]"
		}
		if p.Port != 80 {
			wantHost = net.JoinHostPort(p.Host, strconv.Itoa(p.Port))
		}
		if r2.Host != wantHost || r2.Host != p.URL.Host {
			t.Fatalf("the origin reads Host %q; judged %s:%d (%q)\n%q", r2.Host, p.Host, p.Port, p.URL.Host, out.Bytes())
		}
		if r2.RequestURI != p.URL.RequestURI() {
			t.Fatalf("the origin reads target %q; judged %q\n%q", r2.RequestURI, p.URL.RequestURI(), out.Bytes())
		}
		if r2.Method != req.Method {
			t.Fatalf("method %q forwarded as %q", req.Method, r2.Method)
		}
		for _, h := range hopHeaders {
			if _, ok := r2.Header[http.CanonicalHeaderKey(h)]; ok && h != "Connection" {
				t.Fatalf("hop-by-hop header %s forwarded\n%q", h, out.Bytes())
			}
		}
		if !r2.Close {
			t.Fatalf("forwarded without Connection: close\n%q", out.Bytes())
		}
		// The whole stream: one request, its body, then nothing.
		br := bufio.NewReader(bytes.NewReader(out.Bytes()))
		r3, _ := http.ReadRequest(br)
		got, berr := io.ReadAll(r3.Body)
		if ferr == nil {
			if berr != nil {
				t.Fatalf("forwarded body does not read: %v\n%q", berr, out.Bytes())
			}
			if !bytes.Equal(got, sent.Bytes()) {
				t.Fatalf("forwarded body %q, the client sent %q", got, sent.Bytes())
			}
		}
		if rest, _ := io.ReadAll(br); len(rest) > 0 {
			t.Fatalf("%d bytes after the forwarded request (a second request?): %q", len(rest), rest)
		}
	})
}
