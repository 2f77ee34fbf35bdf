package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// Sentinel errors, carried by an [Event]'s Err and tested with errors.Is.
var (
	// ErrMalformed: the request is not one the proxy accepts (see the
	// package documentation).
	ErrMalformed = errors.New("egress: malformed proxy request")
	// ErrNotConfigured: the host and port are not among the upstream's
	// configured hosts.
	ErrNotConfigured = errors.New("egress: host not in the upstream's hosts")
	// ErrPolicy: the policy's network section refused the host.
	ErrPolicy = errors.New("egress: refused by the policy's network section")
	// ErrDial: the connection failed or the checked dialer refused the
	// address it resolved to.
	ErrDial = errors.New("egress: connection failed")
	// ErrBusy: more connections than Options.MaxConns at once.
	ErrBusy = errors.New("egress: too many connections")
)

// Target is one host the upstream may reach: an exact, lower-case name
// (or IP literal) and a port.
type Target struct {
	Host string
	Port int
}

func (t Target) String() string { return net.JoinHostPort(t.Host, fmt.Sprint(t.Port)) }

// Event is what the proxy reports about one request: never its content.
type Event struct {
	Method  string // CONNECT or the HTTP method
	Host    string // normalised; empty when the request did not parse
	Port    int
	Allowed bool
	// Code is the violation code of a refusal: NETWORK_ACCESS_ATTEMPT
	// (not configured, policy, address), MALFORMED_MESSAGE, or
	// CONNECTION_LIMIT.
	Code violation.Code
	Err  error // nil when allowed
}

// Options configure a Proxy. Dial is required.
type Options struct {
	// Targets are the configured hosts; a request for anything else is
	// refused (ErrNotConfigured). Empty: everything is refused.
	Targets []Target
	// Check is the policy's decision for scheme://host:port (https for
	// CONNECT, http for a forwarded request). Nil refuses everything:
	// without a policy to ask, nothing is allowed.
	Check func(scheme, host string, port int) error
	// Dial connects (comm.CheckedDialer); it resolves the name itself.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Audit receives one Event per request; it may block briefly.
	Audit func(Event)
	// Logger receives operational messages (never contents).
	Logger *slog.Logger
	// MaxConns bounds concurrent connections (default 16).
	MaxConns int
	// HeadTimeout bounds reading a request's head (default 10s).
	HeadTimeout time.Duration
}

// Proxy serves one upstream's egress. Serve may be called once per
// listener; a Proxy is safe for concurrent use.
type Proxy struct {
	o      Options
	sem    chan struct{}
	mu     sync.Mutex
	open   map[net.Conn]struct{}
	closed bool // Serve is ending: a connection tracked now is closed at once
}

// New validates o and returns a Proxy.
func New(o Options) (*Proxy, error) {
	if o.Dial == nil {
		return nil, errors.New("egress: Options.Dial is required")
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 16
	}
	if o.HeadTimeout <= 0 {
		o.HeadTimeout = 10 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Audit == nil {
		o.Audit = func(Event) {}
	}
	for i, t := range o.Targets {
		h, err := normalHost(t.Host)
		if err != nil || t.Port < 1 || t.Port > 65535 {
			return nil, fmt.Errorf("egress: target %q: %w", t, ErrMalformed)
		}
		o.Targets[i].Host = h
	}
	return &Proxy{o: o, sem: make(chan struct{}, o.MaxConns), open: map[net.Conn]struct{}{}}, nil
}

// Serve accepts connections on l until it is closed, then closes every
// connection still open (both sides of every tunnel), cancels dials in
// progress and returns: nothing outlives the sandboxed run.
func (p *Proxy) Serve(l net.Listener) {
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		p.mu.Lock()
		p.closed = true
		for c := range p.open {
			c.Close()
		}
		p.mu.Unlock()
		wg.Wait()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		select {
		case p.sem <- struct{}{}:
		default:
			p.o.Audit(Event{Code: violation.ConnectionLimit, Err: ErrBusy})
			c.Close()
			continue
		}
		p.track(c, true)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-p.sem }()
			defer p.track(c, false)
			defer c.Close()
			p.handle(ctx, c)
		}()
	}
}

func (p *Proxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		if p.closed {
			c.Close()
			return
		}
		p.open[c] = struct{}{}
	} else {
		delete(p.open, c)
	}
}

// maxHead bounds a request's head (request line and headers).
const maxHead = 32 << 10

// handle serves one client connection: one request.
func (p *Proxy) handle(ctx context.Context, c net.Conn) {
	lim := &headLimit{r: c, n: maxHead}
	br := bufio.NewReaderSize(lim, 4096)
	c.SetReadDeadline(time.Now().Add(p.o.HeadTimeout))
	req, err := http.ReadRequest(br)
	if err != nil {
		p.refuse(c, Event{Code: violation.MalformedMessage, Err: fmt.Errorf("%w: %v", ErrMalformed, err)}, http.StatusBadRequest)
		return
	}
	c.SetReadDeadline(time.Time{})
	lim.lift()
	t, err := ParseTarget(req)
	ev := Event{Method: req.Method, Host: t.Host, Port: t.Port}
	if err != nil {
		ev.Code, ev.Err = violation.MalformedMessage, err
		p.refuse(c, ev, http.StatusBadRequest)
		return
	}
	if err := p.admit(t.Target, t.Tunnel); err != nil {
		ev.Code, ev.Err = violation.NetworkAccessAttempt, err
		p.refuse(c, ev, http.StatusForbidden)
		return
	}
	dctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	up, err := p.o.Dial(dctx, "tcp", net.JoinHostPort(t.Host, fmt.Sprint(t.Port)))
	cancel()
	if err != nil {
		// The checked dialer's refusal (a private address) and a plain
		// failure look alike to the client; the audit keeps the cause.
		ev.Code, ev.Err = violation.NetworkAccessAttempt, fmt.Errorf("%w: %w", ErrDial, err)
		p.refuse(c, ev, http.StatusBadGateway)
		return
	}
	p.track(up, true)
	defer p.track(up, false)
	defer up.Close()
	ev.Allowed = true
	p.o.Audit(ev)
	if req.Method == http.MethodConnect {
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		pipe(c, br, up)
		return
	}
	if err := forward(req, t, up); err != nil {
		p.o.Logger.Debug("egress: forwarding", "host", t.Host, "err", err)
		return
	}
	io.Copy(c, up) // Connection: close: the server ends the answer
}

// admit checks t against the configured hosts, then the policy.
func (p *Proxy) admit(t Target, tunnel bool) error {
	if !slices.Contains(p.o.Targets, t) {
		return fmt.Errorf("%w: %s", ErrNotConfigured, t)
	}
	if p.o.Check == nil {
		return fmt.Errorf("%w: no policy to ask", ErrPolicy)
	}
	// A forwarded request is http. A tunnel's bytes are not read, so it
	// is judged by its port: 80 is http (Node's proxy support tunnels
	// plain http too), any other port https — the policy's
	// allow_schemes cannot be sidestepped by tunnelling plain http to
	// port 80.
	scheme := "http"
	if tunnel && t.Port != 80 {
		scheme = "https"
	}
	if err := p.o.Check(scheme, t.Host, t.Port); err != nil {
		return fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	return nil
}

// refuse answers status, closes and audits.
func (p *Proxy) refuse(c net.Conn, ev Event, status int) {
	p.o.Audit(ev)
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		status, http.StatusText(status), len(ev.Code)+1, string(ev.Code)+"\n")
}

// pipe copies both ways until either side ends, then closes both.
func pipe(client net.Conn, buffered *bufio.Reader, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		io.Copy(up, buffered) // what the client sent after the head, then the rest
		done <- struct{}{}
	}()
	go func() {
		io.Copy(client, up)
		done <- struct{}{}
	}()
	<-done
	client.Close()
	up.Close()
	<-done
}

// headLimit caps what the request head may read; lift removes the cap.
type headLimit struct {
	r      io.Reader
	n      int64
	lifted bool
	mu     sync.Mutex
}

func (h *headLimit) Read(b []byte) (int, error) {
	h.mu.Lock()
	lifted, n := h.lifted, h.n
	h.mu.Unlock()
	if !lifted {
		if n <= 0 {
			return 0, errors.New("request head too large")
		}
		if int64(len(b)) > n {
			b = b[:n]
		}
	}
	k, err := h.r.Read(b)
	h.mu.Lock()
	h.n -= int64(k)
	h.mu.Unlock()
	return k, err
}

func (h *headLimit) lift() {
	h.mu.Lock()
	h.lifted = true
	h.mu.Unlock()
}
