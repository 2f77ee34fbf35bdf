// Package origin decides which browser origins may reach Airlock's HTTP endpoints: an
// allow-list of exact origins and the keyword [Loopback]. It is a kit package so that
// the configuration checks an entry with the same parser the server enforces it with.
package origin

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Loopback is the allow-list entry admitting any http(s) origin on a
// loopback host (localhost, 127.0.0.0/8, ::1) at any port. It is the
// default when no list is configured.
const Loopback = "loopback"

// ErrInvalid reports an unusable allow-list entry.
var ErrInvalid = errors.New("invalid origin")

// List decides whether a request's Origin header may reach the server.
type List struct {
	exact    map[string]bool
	loopback bool
}

// NewList builds the allow-list: exact origins ("https://app.example",
// "http://localhost:6274") and the keyword [Loopback]. An empty list means
// loopback origins only.
func NewList(list []string) (*List, error) {
	o := &List{exact: map[string]bool{}}
	if len(list) == 0 {
		o.loopback = true
		return o, nil
	}
	for _, entry := range list {
		if entry == Loopback {
			o.loopback = true
			continue
		}
		norm, ok := normalOrigin(entry)
		if !ok {
			return nil, fmt.Errorf("%w %q: want scheme://host[:port] (http or https, no path) or %q", ErrInvalid, entry, Loopback)
		}
		o.exact[norm] = true
	}
	return o, nil
}

// Allowed reports whether a request carrying this Origin header value may
// proceed. No Origin header (a non-browser client) is allowed; "null" (a
// sandboxed frame, a file: page) and anything unparsable are not.
func (o *List) Allowed(origin string) bool {
	if origin == "" {
		return true
	}
	norm, ok := normalOrigin(origin)
	if !ok {
		return false
	}
	if o.exact[norm] {
		return true
	}
	return o.loopback && isLoopbackHost(hostOf(norm))
}

// normalOrigin lower-cases scheme and host and drops a default port, so
// "HTTPS://App.Example:443" and "https://app.example" are one origin.
func normalOrigin(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", false
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "http" && scheme != "https" {
		return "", false
	}
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, true
}

func hostOf(origin string) string {
	u, _ := url.Parse(origin)
	return u.Hostname()
}

func isLoopbackHost(h string) bool {
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// IsLoopbackAddr reports whether a listen address binds loopback only
// ("127.0.0.1:8080", "[::1]:0", "localhost:9000"); ":8080" and "0.0.0.0"
// bind every interface and are not.
func IsLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return isLoopbackHost(strings.ToLower(host))
}
