package comm

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/kit/urlnorm"
)

// HostRules is the policy's host allow/deny decision. The fetcher calls
// CheckURL for the first URL and for every redirect target; an error
// refuses the URL with ErrHostDenied (wrapping it). *policy.Policy
// implements it (and [IPRules]).
type HostRules interface {
	CheckURL(u *url.URL) error
}

// HopRules is optionally implemented by a [HostRules]. When present, every
// redirect target gets the caller's full policy decision through CheckHop
// before anything else judges or requests it, not only the host rules: a
// 302 from an allowed path into a path a rule gates or denies is not
// followed (issue 10, item 2; TestFetchHopRules). To refuse, CheckHop
// returns a *[RuleError]; any other error refuses too, as denied. The
// first URL is not passed to CheckHop: the caller decided it (and a person
// may have approved it) before calling Fetch.
type HopRules interface {
	CheckHop(u *url.URL) error
}

// RuleError is how a [HopRules] refuses a redirect target: RuleID names the
// policy rule (or section) that decided, and Approval says the policy asks
// for approval rather than denies. RuleID is operator-written text and is
// shown to the agent; Err is the private reason.
type RuleError struct {
	RuleID   string
	Approval bool
	Err      error
}

func (e *RuleError) Error() string {
	s := "denied by rule " + e.RuleID
	if e.Approval {
		s = "needs approval by rule " + e.RuleID
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *RuleError) Unwrap() error { return e.Err }

// Defaults for [FetchOptions].
const (
	DefaultMaxBodyBytes = 2 << 20
	DefaultTimeout      = 30 * time.Second
	DefaultMaxRedirects = 5
	DefaultUserAgent    = "Airlock/0.1 (+https://github.com/airlock-dev/airlock)"
)

// maxURLBytes bounds a URL given to Fetch or found in a redirect.
const maxURLBytes = 8192

// FetchOptions configures a [Fetcher]. The zero value of every field but
// Rules means the default.
type FetchOptions struct {
	// Rules is required: the policy's host allow/deny rules.
	Rules HostRules
	// AllowHTTPHosts lists the hosts (exact names or IP addresses, no
	// wildcards) that may be fetched over plain http. Every other host
	// needs https.
	AllowHTTPHosts []string
	// AllowPrivate lists the address ranges that may be connected to
	// although they are loopback, private, link-local or reserved. Default
	// none. Tests use 127.0.0.0/8.
	AllowPrivate []netip.Prefix
	// MaxBodyBytes caps the body, counted while streaming (after
	// decompression). Default 2 MiB.
	MaxBodyBytes int64
	// AllowTruncate makes a body over MaxBodyBytes come back cut at the
	// cap with Document.Truncated set, instead of refused with ErrTooLarge
	// (the default).
	AllowTruncate bool
	// Timeout bounds the whole fetch: robots.txt, redirects and body.
	// Default 30 s.
	Timeout time.Duration
	// MaxRedirects is how many redirects are followed; one more is
	// ErrTooManyRedirects. 0 means the default, 5; negative means none.
	MaxRedirects int
	// IgnoreRobots turns off the robots.txt check. The zero value honours
	// robots.txt, so the safe behaviour is the default and cannot be
	// forgotten (a "RespectRobots bool" could not default to true).
	IgnoreRobots bool
	// UserAgent is sent with every request and its product token
	// ("airlock") is the name looked up in robots.txt.
	UserAgent string
	// Resolver resolves host names; default net.DefaultResolver.
	Resolver Resolver
	// RootCAs verifies https servers; nil means the system roots.
	RootCAs *x509.CertPool
	// Now is the clock for Document.RetrievedAt and the robots cache.
	Now func() time.Time
	// Headers, if set, gives the extra headers (credentials, package
	// credentials) for a page request to host — the request URL's
	// normalised host[:port]. It is asked again for every hop of a
	// redirect chain with that hop's host, so a header meant for one host
	// never rides a redirect to another (TestFetchHeadersPerHop); it is
	// never asked for robots.txt or search requests. An error stops the
	// fetch before anything is sent (ErrCredential).
	Headers func(host string) (http.Header, error)
}

// Document is one fetched page. Text is raw, unfenced content: the caller
// fences and attributes it.
type Document struct {
	URL          string    // final URL, after redirects
	RequestedURL string    // the URL asked for, normalised (no fragment)
	Status       int       // HTTP status of the final response (2xx)
	ContentType  string    // media type, lower-case, without parameters
	Text         string    // readable text: HTML converted, JSON and text as received, UTF-8
	Bytes        int64     // body bytes received (after decompression, at most MaxBodyBytes)
	SHA256       string    // hex SHA-256 of Text
	Redirects    []string  // redirect targets in order; the last equals URL
	RetrievedAt  time.Time // when the body was complete
	Truncated    bool      // the body was cut at MaxBodyBytes (only with AllowTruncate)
}

// Fetcher performs comm.fetch. It is safe for concurrent use.
type Fetcher struct {
	rules         HostRules
	httpHosts     map[string]bool
	maxBody       int64
	allowTruncate bool
	timeout       time.Duration
	maxRedirects  int
	hops          HopRules     // nil: redirect targets get the host rules only
	robots        *robotsCache // nil: robots.txt ignored
	ua, uaToken   string
	now           func() time.Time
	client        *http.Client
	headers       func(string) (http.Header, error)
}

// NewFetcher validates opts, fills in defaults and returns a Fetcher whose
// every connection passes the connect-time address check.
func NewFetcher(opts FetchOptions) (*Fetcher, error) {
	if opts.Rules == nil {
		return nil, errors.New("comm: FetchOptions.Rules is required")
	}
	if opts.MaxBodyBytes < 0 || opts.Timeout < 0 {
		return nil, errors.New("comm: FetchOptions.MaxBodyBytes and Timeout must not be negative")
	}
	f := &Fetcher{
		rules:         opts.Rules,
		httpHosts:     map[string]bool{},
		maxBody:       orDefault(opts.MaxBodyBytes, DefaultMaxBodyBytes),
		allowTruncate: opts.AllowTruncate,
		timeout:       orDefault(opts.Timeout, DefaultTimeout),
		maxRedirects:  orDefault(opts.MaxRedirects, DefaultMaxRedirects),
		ua:            orDefault(opts.UserAgent, DefaultUserAgent),
		now:           opts.Now,
		headers:       opts.Headers,
	}
	if opts.MaxRedirects < 0 {
		f.maxRedirects = 0
	}
	if f.now == nil {
		f.now = time.Now
	}
	if !opts.IgnoreRobots {
		f.robots = &robotsCache{m: map[string]robotsEntry{}}
	}
	if strings.ContainsFunc(f.ua, func(r rune) bool { return r < 0x20 || r == 0x7F }) {
		return nil, errors.New("comm: FetchOptions.UserAgent holds control characters")
	}
	if f.uaToken = agentToken(f.ua); f.uaToken == "" {
		return nil, fmt.Errorf("comm: FetchOptions.UserAgent %q has no product token", f.ua)
	}
	for _, h := range opts.AllowHTTPHosts {
		n := normHost(h)
		if n == "" || strings.ContainsAny(n, "*/:@ ") && !isIP(n) {
			return nil, fmt.Errorf("comm: FetchOptions.AllowHTTPHosts: %q is not a host name or IP address", h)
		}
		f.httpHosts[n] = true
	}
	g := &guard{}
	for _, p := range opts.AllowPrivate {
		if !p.IsValid() {
			return nil, fmt.Errorf("comm: FetchOptions.AllowPrivate: invalid prefix %v", p)
		}
		g.allow = append(g.allow, p.Masked())
	}
	g.rules, _ = opts.Rules.(IPRules)
	f.hops, _ = opts.Rules.(HopRules)
	var res Resolver = net.DefaultResolver
	if opts.Resolver != nil {
		res = opts.Resolver
	}
	d := newDialer(res, g)
	f.client = &http.Client{
		Transport: &http.Transport{
			// No proxy, ever: a proxy from the environment would make the
			// proxy's address the one checked, not the target's
			// (TestFetchIgnoresProxyEnv).
			Proxy:                  nil,
			DialContext:            d.DialContext,
			TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: opts.RootCAs},
			TLSHandshakeTimeout:    10 * time.Second,
			MaxResponseHeaderBytes: 256 << 10,
			MaxIdleConns:           16,
			IdleConnTimeout:        30 * time.Second,
		},
		// Redirects are followed by hand (follow), so each target is
		// checked before it is requested and no Referer or cookie rides
		// along.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return f, nil
}

// orDefault returns v, or def when v is the zero value.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func normHost(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return a.Unmap().String()
	}
	return strings.TrimSuffix(h, ".")
}

func isIP(h string) bool { _, err := netip.ParseAddr(h); return err == nil }

// CloseIdleConnections closes the fetcher's idle keep-alive connections.
func (f *Fetcher) CloseIdleConnections() { f.client.CloseIdleConnections() }

// Fetch retrieves rawURL within the fetcher's rules and returns its
// readable text. Every refusal is an *[Error] whose Kind is one of the
// sentinels; see the package documentation for the order of the checks.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Document, error) {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	u, err := f.target(rawURL, "fetch", 0)
	if err != nil {
		return nil, err
	}
	r, err := f.retrieve(ctx, u, f.robots != nil, "fetch")
	if err != nil {
		return nil, err
	}
	mediaType, charset, k, err := classify(r.contentType, r.body)
	if err != nil {
		return nil, err
	}
	if r.truncated {
		r.body = trimPartialRune(r.body)
	}
	text, err := decodeText(r.body, charset)
	if err != nil {
		return nil, err
	}
	text = toText(text, k)
	sum := sha256.Sum256([]byte(text))
	return &Document{
		URL:          r.final.String(),
		RequestedURL: u.String(),
		Status:       r.status,
		ContentType:  mediaType,
		Text:         text,
		Bytes:        int64(len(r.body)),
		SHA256:       hex.EncodeToString(sum[:]),
		Redirects:    r.hops,
		RetrievedAt:  f.now().UTC(),
		Truncated:    r.truncated,
	}, nil
}

// target parses, normalises (package urlnorm) and checks a URL: absolute,
// no user info, https (or http for AllowHTTPHosts), accepted by the host
// rules. It runs for the first URL and for every redirect target, and the
// URL it returns is the one requested.
func (f *Fetcher) target(raw, op string, hop int) (*url.URL, error) {
	if len(raw) > maxURLBytes {
		return nil, newErr(op, ErrInvalidURL, fmt.Sprintf("URL longer than %d bytes", maxURLBytes), nil)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, newErr(op, ErrInvalidURL, "the URL does not parse", err)
	}
	if !u.IsAbs() || u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return nil, newErr(op, ErrInvalidURL, "want an absolute https URL with a host", nil)
	}
	if u.User != nil {
		return nil, newErr(op, ErrInvalidURL, "URLs carrying user info are refused", nil)
	}
	// What the rules judge and what is requested is the normal form, and
	// only it: "/x/../gated" and "//gated" are /gated to the server, so
	// they must be /gated to the rules too (TestFetchRequestsTheNormalForm).
	norm, err := urlnorm.Normalize(raw)
	if err != nil {
		return nil, newErr(op, ErrInvalidURL, err.Error(), err)
	}
	if u, err = url.Parse(norm); err != nil {
		return nil, newErr(op, ErrInvalidURL, "the URL does not parse", err)
	}
	// A hop is judged by the caller's policy first, as a direct request
	// for it was before Fetch: same decision, same code.
	if hop > 0 {
		if err := f.checkHop(u, op, hop); err != nil {
			return nil, err
		}
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !f.httpHosts[normHost(u.Hostname())] {
			return nil, newErr(op, ErrScheme, fmt.Sprintf("plain http is not allowed for %s; use https", where(u, hop)), fmt.Errorf("host %q", u.Hostname()))
		}
	default:
		return nil, newErr(op, ErrScheme, fmt.Sprintf("the scheme of %s is not allowed; use https", where(u, hop)), fmt.Errorf("scheme %q", u.Scheme))
	}
	if err := f.rules.CheckURL(u); err != nil {
		return nil, newErr(op, ErrHostDenied, fmt.Sprintf("%s is not allowed by the policy", where(u, hop)), err)
	}
	return u, nil
}

// where names the target of a request in agent-visible text: the host of
// the URL the caller asked for, or the number of the redirect for a target
// the remote server chose. A redirect's host, path or scheme is text the
// remote server wrote, and error text is not fenced, so it never appears
// there (issue 10, item 4; TestErrorsCarryNoRemoteText); the private cause
// keeps it for the audit.
func where(u *url.URL, hop int) string {
	if hop > 0 {
		return fmt.Sprintf("the target of redirect %d", hop)
	}
	return strconv.Quote(u.Hostname())
}

// checkHop asks the caller's full policy about redirect target number hop,
// so a hop is refused with the code a direct request for it would get:
// POLICY_DENIED for a rule's or the network section's deny,
// APPROVAL_REQUIRED for a rule asking for approval (TestFetchHopRules).
func (f *Fetcher) checkHop(u *url.URL, op string, hop int) error {
	if f.hops == nil {
		return nil
	}
	err := f.hops.CheckHop(u)
	if err == nil {
		return nil
	}
	var re *RuleError
	if !errors.As(err, &re) {
		return newErr(op, ErrRedirectDenied, fmt.Sprintf("redirect %d: the policy refused its target", hop), err)
	}
	rule := boundRule(re.RuleID)
	if re.Approval {
		return newErr(op, ErrRedirectNeedsApproval, fmt.Sprintf("redirect %d: its target needs approval (rule %s); declare it as a need of its own", hop, rule), err)
	}
	return newErr(op, ErrRedirectDenied, fmt.Sprintf("redirect %d: its target is denied by policy (rule %s)", hop, rule), err)
}

// boundRule keeps a rule id printable and short; rule ids come from the
// operator's policy, but the detail is shown to the agent.
func boundRule(id string) string {
	if len(id) > 64 {
		id = id[:64]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == utf8.RuneError {
			return '?'
		}
		return r
	}, id)
}

// response is a retrieved 2xx response with its body read.
type response struct {
	final       *url.URL
	hops        []string
	status      int
	contentType string
	body        []byte
	truncated   bool
}

func (f *Fetcher) retrieve(ctx context.Context, u *url.URL, robots bool, op string) (*response, error) {
	resp, hops, err := f.follow(ctx, u, robots, op, op == "fetch")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	final := resp.Request.URL
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &Error{Op: op, Kind: ErrStatus, Status: resp.StatusCode, Detail: fmt.Sprintf("HTTP %d from %s", resp.StatusCode, where(final, len(hops))),
			Err: fmt.Errorf("from %s", final)}
	}
	r := &response{final: final, hops: hops, status: resp.StatusCode, contentType: resp.Header.Get("Content-Type")}
	if resp.ContentLength > f.maxBody && !f.allowTruncate {
		return nil, newErr(op, ErrTooLarge, fmt.Sprintf("the server announced %d bytes; the limit is %d", resp.ContentLength, f.maxBody), nil)
	}
	// The cap is enforced on the stream, after transparent gzip
	// decompression, so neither a lying Content-Length nor a compression
	// bomb gets more than MaxBodyBytes+1 bytes into memory
	// (TestFetchBodyCap).
	r.body, err = io.ReadAll(io.LimitReader(resp.Body, f.maxBody+1))
	if err != nil {
		return nil, f.netErr(ctx, op, final, len(hops), err)
	}
	if int64(len(r.body)) > f.maxBody {
		if !f.allowTruncate {
			return nil, newErr(op, ErrTooLarge, fmt.Sprintf("the body exceeds the %d-byte limit", f.maxBody), nil)
		}
		r.body, r.truncated = r.body[:f.maxBody], true
	}
	return r, nil
}

// follow requests u and follows up to maxRedirects redirects, checking
// each target with target (scheme, user info, host rules) and, when robots
// is set, robots.txt, before anything is sent to it. It returns the first
// non-redirect response, whatever its status.
func (f *Fetcher) follow(ctx context.Context, u *url.URL, robots bool, op string, page bool) (*http.Response, []string, error) {
	var hops []string
	for {
		if robots {
			if err := f.checkRobots(ctx, u, op, len(hops)); err != nil {
				return nil, hops, err
			}
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, hops, newErr(op, ErrInvalidURL, "the URL cannot be requested", err)
		}
		req.Header.Set("User-Agent", f.ua)
		req.Header.Set("Accept", "text/html, application/xhtml+xml, application/json, text/plain;q=0.9, */*;q=0.1")
		if page && f.headers != nil {
			// Per hop, by this hop's host: u is the target as normalised
			// and judged by target().
			h, err := f.headers(u.Host)
			if err != nil {
				return nil, hops, newErr(op, ErrCredential, "a credential this request is configured with is unavailable (revoked or invalid); ask an operator", err)
			}
			for name, vs := range h {
				for _, v := range vs {
					req.Header.Add(name, v)
				}
			}
		}
		resp, err := f.client.Do(req)
		if err != nil {
			return nil, hops, f.netErr(ctx, op, u, len(hops), err)
		}
		switch resp.StatusCode {
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
			http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		default:
			return resp, hops, nil
		}
		loc := resp.Header.Get("Location")
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if len(hops) >= f.maxRedirects {
			return nil, hops, newErr(op, ErrTooManyRedirects, fmt.Sprintf("more than %d redirects", f.maxRedirects), nil)
		}
		next, err := u.Parse(loc)
		if loc == "" || err != nil {
			cause := fmt.Errorf("from %s", u)
			if err != nil {
				cause = fmt.Errorf("from %s: %w", u, err)
			}
			return nil, hops, &Error{Op: op, Kind: ErrStatus, Status: resp.StatusCode,
				Detail: fmt.Sprintf("HTTP %d from %s without a usable Location", resp.StatusCode, where(u, len(hops))), Err: cause}
		}
		if u, err = f.target(next.String(), op, len(hops)+1); err != nil {
			return nil, hops, err
		}
		hops = append(hops, u.String())
	}
}

// netErr turns a transport error into an agent-safe *Error. The cause
// (which may name resolved internal addresses) stays private.
func (f *Fetcher) netErr(ctx context.Context, op string, u *url.URL, hop int, err error) error {
	host := where(u, hop)
	var e *Error
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	switch {
	case errors.As(err, &e):
		c := *e // from the dialer's guard: add the host, keep the address private
		c.Op = op
		if c.Detail == "" {
			c.Detail = fmt.Sprintf("%s resolves to or is an address that may not be reached", host)
		}
		return &c
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return newErr(op, ErrTimeout, fmt.Sprintf("no complete response from %s in time", host), err)
	case ctx.Err() != nil:
		return newErr(op, ErrUnavailable, "the request was canceled", err)
	case errors.As(err, &dns):
		return newErr(op, ErrUnavailable, fmt.Sprintf("%s could not be resolved", host), err)
	case errors.As(err, &cert):
		return newErr(op, ErrUnavailable, fmt.Sprintf("the TLS certificate of %s could not be verified", host), err)
	}
	return newErr(op, ErrUnavailable, fmt.Sprintf("could not retrieve from %s", host), err)
}

// trimPartialRune drops an incomplete UTF-8 sequence cut off at the end.
func trimPartialRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		c := b[len(b)-i]
		if c < 0x80 {
			return b
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			return b
		}
	}
	return b
}
