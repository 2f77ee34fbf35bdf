package edge

import (
	"net"
	"testing"
)

// fakeAddr is a remote address as a listener reports it.
type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }

// fakeConn is an accepted connection: the tracker reads its address and
// may close it; nothing else.
type fakeConn struct {
	net.Conn // nil: any other use panics
	remote   fakeAddr
	closed   bool
}

func (c *fakeConn) RemoteAddr() net.Addr { return c.remote }
func (c *fakeConn) Close() error         { c.closed = true; return nil }

// FuzzTrackerSequence drives one Tracker through a sequence of accepts,
// authentications and closes decoded from the input (stateful fuzzing)
// and checks it after every step against the documented policy, kept as
// a model: at a bound the oldest connection that has not authenticated
// is closed (for the per-address bound: that address's oldest), and only
// if there is none is the new one refused. After every step:
//
//   - at most Max connections are open, and at most
//     MaxUnauthenticatedPerAddr unauthenticated ones per address;
//   - the open set, the per-address counts (no leaked or zero entries)
//     and Evicted() are exactly the model's;
//   - an authenticated connection is never closed by the tracker;
//   - a newcomer is refused only when every one of Max slots is held by
//     an authenticated connection; nobody is evicted below the bounds;
//   - every connection the tracker closes or refuses is reported to
//     onRefuse once, with its address.
//
// Input: Max (0-4, 0 unbounded) and the per-address bound (0-3), then one
// byte per operation.
func FuzzTrackerSequence(f *testing.F) {
	f.Add(uint8(3), uint8(2), []byte{0, 0, 0, 0, 8, 0, 0})
	f.Add(uint8(2), uint8(0), []byte{0, 1, 4, 0, 0, 0, 0, 5, 9, 0})
	f.Add(uint8(0), uint8(1), []byte{0, 0, 0, 0, 6, 6, 4, 0})
	f.Add(uint8(3), uint8(3), []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 0, 0})
	f.Add(uint8(1), uint8(1), []byte{0, 4, 0, 8, 12, 1, 5, 2})
	remotes := []string{"10.0.0.1:4001", "10.0.0.1:4002", "[2001:db8::1]:443", "[fe80::1%eth0]:1", "not-an-address"}
	f.Fuzz(func(t *testing.T, max, perAddr uint8, ops []byte) {
		if len(ops) > 1000 {
			return
		}
		lim := ConnLimits{Max: int(max % 5), MaxUnauthenticatedPerAddr: int(perAddr % 4)}
		var refusals []string
		tr := NewTracker(lim, func(remote, _ string) { refusals = append(refusals, remote) })

		type mconn struct {
			fc         *fakeConn
			tc         *Conn
			addr       string
			auth, open bool // auth: MarkAuthenticated called; open: tracked
			closedByUs bool
		}
		var all []*mconn // admitted, oldest first
		var wantRefusals []string
		evicted := int64(0)

		openCount := func() int {
			n := 0
			for _, m := range all {
				if m.open {
					n++
				}
			}
			return n
		}
		unauth := func(addr string) int {
			n := 0
			for _, m := range all {
				if m.open && !m.auth && (addr == "" || m.addr == addr) {
					n++
				}
			}
			return n
		}
		oldestUnauth := func(addr string) *mconn {
			for _, m := range all {
				if m.open && !m.auth && (addr == "" || m.addr == addr) {
					return m
				}
			}
			return nil
		}
		evict := func(m *mconn) {
			m.open = false
			evicted++
			wantRefusals = append(wantRefusals, m.addr)
		}

		for step, op := range ops {
			switch op % 4 {
			case 0, 3: // a connection arrives
				remote := remotes[int(op/4)%len(remotes)]
				addr := RemoteHost(remote)
				fc := &fakeConn{remote: fakeAddr(remote)}
				// The model, from the documentation.
				var victims []*mconn
				if lim.MaxUnauthenticatedPerAddr > 0 && unauth(addr) >= lim.MaxUnauthenticatedPerAddr {
					if v := oldestUnauth(addr); v != nil {
						victims = append(victims, v)
						evict(v)
					}
				}
				if lim.Max > 0 && openCount() >= lim.Max {
					if v := oldestUnauth(""); v != nil {
						victims = append(victims, v)
						evict(v)
					}
				}
				full := lim.Max > 0 && openCount() >= lim.Max
				if full {
					for _, m := range all {
						if m.open && !m.auth {
							t.Fatalf("step %d: model refuses while %s is unauthenticated", step, m.addr)
						}
					}
					evicted++
					wantRefusals = append(wantRefusals, addr)
				}

				tc := tr.admit(fc)
				if full != (tc == nil) {
					t.Fatalf("step %d: admit from %s returned %v; refusal expected: %v", step, remote, tc, full)
				}
				if full && !fc.closed {
					t.Fatalf("step %d: a refused connection was left open", step)
				}
				for _, v := range victims {
					if !v.fc.closed {
						t.Fatalf("step %d: %s should have been evicted (the oldest unauthenticated)", step, v.addr)
					}
				}
				if tc != nil {
					all = append(all, &mconn{fc: fc, tc: tc, addr: addr, open: true})
				}
			case 1: // a request on a connection authenticates
				if len(all) == 0 {
					continue
				}
				m := all[int(op/4)%len(all)]
				m.tc.MarkAuthenticated()
				if m.open {
					m.auth = true
				}
			case 2: // the server closes a connection (its handler ended)
				if len(all) == 0 {
					continue
				}
				m := all[int(op/4)%len(all)]
				if err := m.tc.Close(); err != nil {
					t.Fatal(err)
				}
				m.open, m.closedByUs = false, true
			}

			// After every step.
			if lim.Max > 0 && tr.Open() > lim.Max {
				t.Fatalf("step %d: %d open, bound %d", step, tr.Open(), lim.Max)
			}
			if tr.Open() != openCount() {
				t.Fatalf("step %d: tracker has %d open, model %d", step, tr.Open(), openCount())
			}
			if tr.Evicted() != evicted {
				t.Fatalf("step %d: tracker evicted %d, model %d", step, tr.Evicted(), evicted)
			}
			tr.mu.Lock()
			counts := map[string]int{}
			for a, n := range tr.unauth {
				counts[a] = n
			}
			tr.mu.Unlock()
			for a, n := range counts {
				if n <= 0 || n != unauth(a) {
					t.Fatalf("step %d: unauthenticated count of %s is %d, model %d", step, a, n, unauth(a))
				}
				if lim.MaxUnauthenticatedPerAddr > 0 && n > lim.MaxUnauthenticatedPerAddr {
					t.Fatalf("step %d: %d unauthenticated from %s, bound %d", step, n, a, lim.MaxUnauthenticatedPerAddr)
				}
			}
			for _, m := range all {
				if m.open && !m.auth && counts[m.addr] == 0 {
					t.Fatalf("step %d: unauthenticated %s not counted", step, m.addr)
				}
				if m.auth && m.fc.closed && !m.closedByUs {
					t.Fatalf("step %d: authenticated %s closed by the tracker", step, m.addr)
				}
				if m.open && m.fc.closed {
					t.Fatalf("step %d: tracked connection %s is closed", step, m.addr)
				}
			}
			if len(refusals) != len(wantRefusals) {
				t.Fatalf("step %d: onRefuse heard %v, want %v", step, refusals, wantRefusals)
			}
			for i := range refusals {
				if refusals[i] != wantRefusals[i] {
					t.Fatalf("step %d: onRefuse heard %v, want %v", step, refusals, wantRefusals)
				}
			}
		}
	})
}
