package edge

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"
)

// acceptor serves a tracked listener, keeping the accepted connections.
type acceptor struct {
	t       *Tracker
	ln      net.Listener
	mu      sync.Mutex
	conns   []*Conn
	refused []string // the remote address of each refusal, in order
}

func newAcceptor(t *testing.T, lim ConnLimits) *acceptor {
	t.Helper()
	a := &acceptor{}
	tr := NewTracker(lim, func(remote, reason string) { a.mu.Lock(); a.refused = append(a.refused, remote); a.mu.Unlock() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a.t, a.ln = tr, tr.Listener(ln)
	go func() {
		for {
			c, err := a.ln.Accept()
			if err != nil {
				return
			}
			a.mu.Lock()
			a.conns = append(a.conns, c.(*Conn))
			a.mu.Unlock()
		}
	}()
	t.Cleanup(func() { a.ln.Close() })
	return a
}

// waitRefusals waits until the tracker has reported n refusals (they are
// reported after the connection is closed, on the accepting goroutine)
// and returns them.
func (a *acceptor) waitRefusals(t *testing.T, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) { // a hang guard
		a.mu.Lock()
		got := slices.Clone(a.refused)
		a.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("refusals = %v, want %d", got, n)
		}
	}
}

func dialFrom(t *testing.T, src, dst string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", dst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByPeer reports whether the server closed c. The read returns as
// soon as it is closed; the half minute is a hang guard for a loaded
// machine, where 2 s was not always enough for the server's goroutine.
func closedByPeer(c net.Conn) bool {
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := c.Read(make([]byte, 1))
	return err != nil && !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// accepted returns the connections accepted so far, oldest first.
func (a *acceptor) accepted() []*Conn {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.conns)
}

func (a *acceptor) waitOpen(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a hang guard
	for a.t.Open() != n {
		if time.Now().After(deadline) {
			t.Fatalf("open = %d, want %d", a.t.Open(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTrackerPerAddressEvictsTheOldestUnauthenticated(t *testing.T) {
	a := newAcceptor(t, ConnLimits{Max: 100, MaxUnauthenticatedPerAddr: 3})
	addr := a.ln.Addr().String()
	var attacker []net.Conn
	for range 3 {
		attacker = append(attacker, dialFrom(t, "127.0.0.2", addr))
	}
	a.waitOpen(t, 3)
	fourth := dialFrom(t, "127.0.0.2", addr)
	a.waitOpen(t, 3)
	if !closedByPeer(attacker[0]) {
		t.Fatal("the oldest unauthenticated connection from the address was not closed")
	}
	// Another address is not affected by 127.0.0.2's bound.
	other := dialFrom(t, "127.0.0.1", addr)
	a.waitOpen(t, 4)
	_ = fourth
	_ = other
	if refused := a.waitRefusals(t, 1); len(refused) != 1 || refused[0] != "127.0.0.2" {
		t.Fatalf("refusals = %v", refused)
	}
}

// TestTrackerProxiesAreNotBoundPerAddress: a load balancer's address
// (ConnLimits.Proxies) holds more unauthenticated connections than the
// per-address bound — a proxy that opens one per request has as many as
// requests in flight, and closing them made it answer 502 under load —
// while any other address is still bound, and max_connections still makes
// room by closing the proxy's oldest unauthenticated connection.
func TestTrackerProxiesAreNotBoundPerAddress(t *testing.T) {
	a := newAcceptor(t, ConnLimits{Max: 8, MaxUnauthenticatedPerAddr: 3,
		Proxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}})
	addr := a.ln.Addr().String()
	var proxy []net.Conn
	for i := range 6 {
		proxy = append(proxy, dialFrom(t, "127.0.0.2", addr))
		a.waitOpen(t, i+1)
	}
	for range 4 {
		dialFrom(t, "127.0.0.3", addr)
	}
	a.waitOpen(t, 8) // 6 from the proxy, 2 of 127.0.0.3's 4 …
	refused := a.waitRefusals(t, 2)
	// … the 4th of 127.0.0.3 evicted its own oldest (per address), and at
	// Max the 3rd evicted the oldest unauthenticated one of all: the
	// proxy's first. Every other proxy connection is open.
	if !closedByPeer(proxy[0]) {
		t.Error("at max_connections the proxy's oldest unauthenticated connection was kept")
	}
	for i, c := range proxy[1:] {
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); !isTimeout(err) {
			t.Errorf("proxy connection %d was closed: %v", i+1, err)
		}
	}
	got := map[string]int{}
	for _, r := range refused {
		got[r]++
	}
	if len(refused) != 2 || got["127.0.0.2"] != 1 || got["127.0.0.3"] != 1 {
		t.Errorf("refusals = %v, want one for each address", refused)
	}
}

func TestTrackerNeverEvictsAuthenticated(t *testing.T) {
	a := newAcceptor(t, ConnLimits{Max: 3})
	addr := a.ln.Addr().String()
	good := dialFrom(t, "127.0.0.1", addr)
	a.waitOpen(t, 1)
	a.accepted()[0].MarkAuthenticated()
	for i := range 20 {
		dialFrom(t, "127.0.0.3", addr) // closed at cleanup
		if i < 2 {
			a.waitOpen(t, i+2)
		}
	}
	a.waitOpen(t, 3)
	// The server accepts (and evicts) on its own goroutine: wait for it
	// to have handled every newcomer (a hang guard, not the verdict) ...
	for deadline := time.Now().Add(30 * time.Second); a.t.Evicted() < 17; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("evicted = %d, want ≥ 17", a.t.Evicted())
		}
	}
	// ... so the authenticated connection, if it were to be evicted, is
	// closed by now: it must still be open.
	if _, err := good.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	_ = good.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := good.Read(make([]byte, 1)); !isTimeout(err) {
		t.Fatalf("authenticated connection was closed: %v", err)
	}
	// When every slot is authenticated, a newcomer is refused instead.
	for _, c := range a.accepted() {
		c.MarkAuthenticated()
	}
	late := dialFrom(t, "127.0.0.4", addr)
	if !closedByPeer(late) {
		t.Fatal("a connection beyond the bound with nothing evictable was kept")
	}
	a.waitOpen(t, 3)
}

func TestTrackerFreesSlotOnClose(t *testing.T) {
	a := newAcceptor(t, ConnLimits{Max: 2, MaxUnauthenticatedPerAddr: 2})
	addr := a.ln.Addr().String()
	c1 := dialFrom(t, "127.0.0.1", addr)
	a.waitOpen(t, 1)
	a.accepted()[0].Close()
	a.waitOpen(t, 0)
	_ = c1
	a.t.mu.Lock()
	n := len(a.t.unauth)
	a.t.mu.Unlock()
	if n != 0 {
		t.Fatalf("per-address count leaked: %d", n)
	}
}

func TestAggregatorBoundsRecords(t *testing.T) {
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	var records, total int
	a := NewAggregator(10*time.Second, 4, func(r Refusal, n int) { mu.Lock(); records++; total += n; mu.Unlock() })
	a.now = func() time.Time { return now }
	r := Refusal{Transport: "streamable-http", Remote: "10.0.0.1", Principal: "anonymous", Code: "UNAUTHENTICATED"}
	for range 100000 {
		a.Refuse(r)
	}
	if records != 1 || total != 1 {
		t.Fatalf("first refusal: records=%d total=%d", records, total)
	}
	a.Flush()
	if records != 2 || total != 100000 {
		t.Fatalf("after flush: records=%d total=%d, want 2 / 100000", records, total)
	}
	// Many addresses: at most maxKeys keys, the rest in the overflow bucket.
	for i := range 1000 {
		a.Refuse(Refusal{Remote: net.IPv4(10, 1, byte(i/256), byte(i)).String(), Code: "UNAUTHENTICATED"})
	}
	a.Flush()
	if records > 2+4+2 {
		t.Fatalf("1000 addresses made %d records; want ≤ %d", records, 2+4+2)
	}
	if total != 101000 {
		t.Fatalf("total = %d, every refusal must be counted", total)
	}
	// A new window records the first refusal at once again.
	now = now.Add(11 * time.Second)
	a.Flush()
	before := records
	a.Refuse(r)
	if records != before+1 {
		t.Fatal("first refusal of a new window not recorded at once")
	}
}

func TestAggregatorRunFlushesOnStop(t *testing.T) {
	var mu sync.Mutex
	total := 0
	a := NewAggregator(time.Hour, 0, func(_ Refusal, n int) { mu.Lock(); total += n; mu.Unlock() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	for range 5 {
		a.Refuse(Refusal{Remote: "x", Code: "C"})
	}
	cancel()
	<-done
	if total != 5 {
		t.Fatalf("total = %d after stop, want 5", total)
	}
}
