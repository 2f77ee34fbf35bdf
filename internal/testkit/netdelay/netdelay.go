// Package netdelay puts a network's latency between two processes on one
// machine, for benchmarks (tests only): a proxy on loopback that forwards
// each connection to a target and delivers every byte a fixed time after
// it arrived, in each direction. Deliveries are pipelined — bytes that
// arrive at t leave at t + the delay whatever else is in flight — as on a
// link with that latency and bandwidth to spare, so a protocol that sends
// several messages before it waits pays the delay once, and one that
// waits for each answer pays it every time: what a round trip costs.
package netdelay

import (
	"net"
	"sync"
	"time"
)

// Proxy forwards connections to a target with a delay each way.
type Proxy struct {
	ln      net.Listener
	network string
	target  string
	oneWay  time.Duration
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   map[net.Conn]struct{} // open, for Close
	closed  bool
}

// Start listens on a free loopback port and forwards every connection to
// target on network ("tcp", "unix"), delaying what passes by oneWay in
// each direction (a round trip of twice that). Close stops it.
func Start(network, target string, oneWay time.Duration) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, network: network, target: target, oneWay: oneWay, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the proxy's address, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops listening, ends every forwarded connection and waits for
// the proxy's goroutines.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial(p.network, p.target)
		if err != nil {
			in.Close()
			continue
		}
		if !p.track(in, out) {
			in.Close()
			out.Close()
			return
		}
		p.wg.Add(2)
		go p.pipe(out, in)
		go p.pipe(in, out)
	}
}

// track remembers a pair for Close; false when Close already ran.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// forget closes c and lets Close forget it.
func (p *Proxy) forget(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// chunk is what one read got, and when it may leave.
type chunk struct {
	b   []byte
	due time.Time
}

// pipe copies src to dst, each read delivered oneWay after it arrived;
// at the end of src both connections are closed.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	queue := make(chan chunk, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range queue {
			if d := time.Until(c.due); d > 0 {
				time.Sleep(d)
			}
			if _, err := dst.Write(c.b); err != nil {
				for range queue { // drain, so the reader never blocks
				}
				return
			}
		}
	}()
	for {
		buf := make([]byte, 32<<10)
		n, err := src.Read(buf)
		if n > 0 {
			queue <- chunk{buf[:n], time.Now().Add(p.oneWay)}
		}
		if err != nil { // EOF, a reset or Close: the connection ends
			break
		}
	}
	close(queue)
	<-done
	p.forget(dst)
	p.forget(src)
}
