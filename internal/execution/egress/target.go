package egress

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/internal/kit/urlnorm"
)

// Parsed is a proxy request's destination.
type Parsed struct {
	Target
	// Tunnel: a CONNECT request (judged as https); else URL is the
	// normalised http:// URL to forward.
	Tunnel bool
	URL    *url.URL
}

// ParseTarget reads the destination of a proxy request: CONNECT with an
// authority (host:port, port required), or an absolute-form http:// URL
// (normalised by urlnorm; port 80 unless given). Everything else wraps
// ErrMalformed. It is the parser of what the sandboxed upstream sends
// (FuzzParseTarget).
func ParseTarget(req *http.Request) (Parsed, error) {
	if req.Method == http.MethodConnect {
		// ReadRequest puts a CONNECT's authority in URL.Host; a CONNECT
		// with a path or a scheme is not an authority.
		if req.URL == nil || req.URL.Scheme != "" || req.URL.Path != "" || req.URL.RawQuery != "" || req.URL.User != nil || req.URL.Opaque != "" {
			return Parsed{}, fmt.Errorf("%w: CONNECT needs host:port", ErrMalformed)
		}
		h, p, err := net.SplitHostPort(req.URL.Host)
		if err != nil {
			return Parsed{}, fmt.Errorf("%w: CONNECT needs host:port", ErrMalformed)
		}
		t, err := target(h, p)
		return Parsed{Target: t, Tunnel: true}, err
	}
	if !strings.HasPrefix(strings.ToLower(req.RequestURI), "http://") {
		// Origin-form ("GET / HTTP/1.1": the proxy is not a web server),
		// https:// in absolute form (the client must tunnel), other
		// schemes: refused.
		return Parsed{}, fmt.Errorf("%w: only CONNECT or an absolute http:// URL", ErrMalformed)
	}
	n, err := urlnorm.Normalize(req.RequestURI)
	if err != nil {
		return Parsed{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	u, err := url.Parse(n)
	if err != nil || u.Scheme != "http" {
		return Parsed{}, fmt.Errorf("%w: not an http URL", ErrMalformed)
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	t, err := target(u.Hostname(), port)
	if err == nil && t.Host != u.Hostname() {
		// An address with two spellings ("[::0.0.0.0]" is "::"): what is
		// judged must be what is sent (FuzzParseTarget found it).
		return Parsed{}, fmt.Errorf("%w: the URL's host is not in its canonical form", ErrMalformed)
	}
	return Parsed{Target: t, URL: u}, err
}

func target(host, port string) (Target, error) {
	h, err := normalHost(host)
	if err != nil {
		return Target{}, err
	}
	// Decimal digits only: strconv would take "+80" or "0x50" in other
	// bases; leading zeros are refused so one port has one spelling.
	if port == "" || len(port) > 5 || strings.Trim(port, "0123456789") != "" || (len(port) > 1 && port[0] == '0') {
		return Target{Host: h}, fmt.Errorf("%w: port %q", ErrMalformed, port)
	}
	p, _ := strconv.Atoi(port)
	if p < 1 || p > 65535 {
		return Target{Host: h}, fmt.Errorf("%w: port %d", ErrMalformed, p)
	}
	return Target{Host: h, Port: p}, nil
}

// normalHost is urlnorm.Host with the proxy's sentinel.
func normalHost(h string) (string, error) {
	n, err := urlnorm.Host(h)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return n, nil
}

// hopHeaders are not passed on (RFC 9110 §7.6.1), with the proxy's own.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authorization",
	"Proxy-Authenticate", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// forward writes req to up in origin form, for the normalised URL, once.
func forward(req *http.Request, t Parsed, up io.Writer) error {
	out := req.Clone(req.Context())
	out.URL = t.URL
	out.Host = t.URL.Host // the Host header names what was judged
	out.RequestURI = ""
	for _, h := range hopHeaders {
		out.Header.Del(h)
	}
	out.Close = true
	out.Body = req.Body
	return out.Write(up)
}
