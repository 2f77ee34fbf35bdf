package edge

import (
	"container/list"
	"context"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
)

// ConnLimits bound the connections a Tracker keeps open.
type ConnLimits struct {
	// Max is the most connections open at once (0 = unbounded).
	Max int
	// MaxUnauthenticatedPerAddr is the most connections one remote address
	// may hold before any request on them has authenticated (0 = unbounded).
	MaxUnauthenticatedPerAddr int
	// Proxies are the addresses of load balancers and reverse proxies in
	// front of the server. Each carries many clients' connections — a
	// proxy that opens one per request has as many unauthenticated at once
	// as requests arrive — so the per-address bound does not apply to
	// them: under load it closed their connections mid-request (the proxy
	// answered 502). Max still does, and still makes room by closing the
	// oldest unauthenticated connection.
	Proxies []netip.Prefix
}

// perAddrBound reports whether addr is held to MaxUnauthenticatedPerAddr.
func (l *ConnLimits) perAddrBound(addr string) bool {
	if l.MaxUnauthenticatedPerAddr <= 0 {
		return false
	}
	if len(l.Proxies) == 0 {
		return true
	}
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return true
	}
	ip = ip.Unmap()
	for _, p := range l.Proxies {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

// Tracker bounds open connections. Wrap the listener with [Tracker.Listener]
// and, once a request on a connection has authenticated, call
// [Conn.MarkAuthenticated] (find the connection with [ConnFrom]).
//
// At a bound the tracker closes the oldest connection that has not
// authenticated (for the per-address bound: that address's oldest), and
// only if there is none does it refuse the new one. Idle or slowly-sending
// peers without a token therefore cannot hold the slots a client with a
// token needs: each new connection pushes the oldest unproven one out.
type Tracker struct {
	lim      ConnLimits
	onRefuse func(remote, reason string)

	mu      sync.Mutex
	order   *list.List // *Conn, oldest first
	unauth  map[string]int
	evicted atomic.Int64
}

// NewTracker returns a tracker; onRefuse (may be nil) hears of every
// connection it closes or refuses, with the remote address.
func NewTracker(lim ConnLimits, onRefuse func(remote, reason string)) *Tracker {
	if onRefuse == nil {
		onRefuse = func(string, string) {}
	}
	return &Tracker{lim: lim, onRefuse: onRefuse, order: list.New(), unauth: map[string]int{}}
}

// Open is how many connections are open now.
func (t *Tracker) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.order.Len()
}

// Evicted is how many connections the tracker closed or refused in all.
func (t *Tracker) Evicted() int64 { return t.evicted.Load() }

// Listener wraps ln so every accepted connection is tracked.
func (t *Tracker) Listener(ln net.Listener) net.Listener { return &trackedListener{Listener: ln, t: t} }

type trackedListener struct {
	net.Listener
	t *Tracker
}

func (l *trackedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc := l.t.admit(c); tc != nil {
			return tc, nil
		}
	}
}

// admit tracks c, making room by closing the oldest unauthenticated
// connection where a bound is reached; nil if c itself had to be refused.
func (t *Tracker) admit(c net.Conn) *Conn {
	addr := RemoteHost(c.RemoteAddr().String())
	tc := &Conn{Conn: c, t: t, addr: addr}
	var victims []*Conn
	t.mu.Lock()
	if t.lim.perAddrBound(addr) && t.unauth[addr] >= t.lim.MaxUnauthenticatedPerAddr {
		if v := t.oldestUnauthenticated(addr); v != nil {
			victims = append(victims, t.untrackLocked(v))
		}
	}
	if t.lim.Max > 0 && t.order.Len() >= t.lim.Max {
		if v := t.oldestUnauthenticated(""); v != nil {
			victims = append(victims, t.untrackLocked(v))
		}
	}
	full := t.lim.Max > 0 && t.order.Len() >= t.lim.Max
	if !full {
		tc.elem = t.order.PushBack(tc)
		t.unauth[addr]++
	}
	t.mu.Unlock()
	for _, v := range victims {
		t.evicted.Add(1)
		_ = v.Conn.Close()
		t.onRefuse(v.addr, "connection closed: the oldest one without an authenticated request, to make room")
	}
	if full {
		t.evicted.Add(1)
		_ = c.Close()
		t.onRefuse(addr, "connection refused: every connection slot is held by an authenticated client")
		return nil
	}
	return tc
}

func (t *Tracker) oldestUnauthenticated(addr string) *Conn {
	for e := t.order.Front(); e != nil; e = e.Next() {
		c := e.Value.(*Conn)
		if !c.authenticated.Load() && (addr == "" || c.addr == addr) {
			return c
		}
	}
	return nil
}

// untrackLocked removes c (t.mu held) and returns it; idempotent.
func (t *Tracker) untrackLocked(c *Conn) *Conn {
	if c.elem == nil {
		return c
	}
	t.order.Remove(c.elem)
	c.elem = nil
	if !c.authenticated.Load() {
		t.decUnauthLocked(c.addr)
	}
	return c
}

func (t *Tracker) decUnauthLocked(addr string) {
	if t.unauth[addr]--; t.unauth[addr] <= 0 {
		delete(t.unauth, addr)
	}
}

// Conn is a tracked connection.
type Conn struct {
	net.Conn
	t             *Tracker
	addr          string
	elem          *list.Element // guarded by t.mu; nil once untracked
	authenticated atomic.Bool
}

// MarkAuthenticated records that a request on c proved its identity: c no
// longer counts against its address's bound and is never evicted.
func (c *Conn) MarkAuthenticated() {
	if c == nil || c.authenticated.Load() {
		return
	}
	c.t.mu.Lock()
	defer c.t.mu.Unlock()
	if c.authenticated.Swap(true) || c.elem == nil {
		return
	}
	c.t.decUnauthLocked(c.addr)
}

// Close closes the connection and frees its slot.
func (c *Conn) Close() error {
	c.t.mu.Lock()
	c.t.untrackLocked(c)
	c.t.mu.Unlock()
	return c.Conn.Close()
}

type connKey struct{}

// WithConn stores c in ctx (for http.Server.ConnContext).
func WithConn(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// ConnFrom returns the tracked connection a request arrived on, or nil.
func ConnFrom(ctx context.Context) *Conn {
	c, _ := ctx.Value(connKey{}).(*Conn)
	return c
}

// RemoteHost is the host part of a remote address (the port changes with
// every connection, so limits and aggregation key on the host).
func RemoteHost(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return host
}
