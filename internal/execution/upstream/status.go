package upstream

import (
	"context"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/execution/upstream/warm"
	"github.com/airlock-dev/airlock/internal/kit/metrics"
)

// Health of the warm sessions (issue 23 item 5): per upstream, what this
// process holds and has seen — reported to the metrics as it happens.

// stats is what this process has seen of each upstream.
type stats struct {
	metrics *metrics.Metrics // nil-safe
	mu      sync.Mutex
	by      map[string]*Stat
}

// Stat is one upstream's health as this process has seen it.
type Stat struct {
	Upstream string
	Warm     int   // sessions held now
	Restarts int64 // sessions started again after their process ended by itself
	Calls    int64
	Errors   int64 // calls whose transport failed
	// LastError is the last failure (an exit's status, a transport's
	// failure), LastErrorAt when.
	LastError   string
	LastErrorAt time.Time
	// LastLatency is the last tools/call's duration.
	LastLatency time.Duration
}

func (s *stats) get(id string) *Stat {
	if s.by[id] == nil {
		s.by[id] = &Stat{Upstream: id}
	}
	return s.by[id]
}

// initWarm creates the connector's pool: an exit it did not order is
// audited (upstream.exited) and counted.
func (u *Connector) initWarm(opts *Options) {
	u.stats = &stats{metrics: opts.Metrics, by: map[string]*Stat{}}
	u.pool = warm.New(&warm.Options{
		Now: u.now,
		OnExit: func(k warm.Key, x *warm.Exit) {
			u.stats.failed(k.Upstream, "exited: "+x.Status, u.now(), false)
			u.append(context.Background(), audit.UpstreamExited(u.now().UTC(), audit.Exited{Principal: k.Principal,
				Upstream: k.Upstream, Scope: k.Scope, Status: x.Status, Stderr: x.Stderr}))
		},
		OnStart: func(k warm.Key, restart bool) {
			u.stats.mu.Lock()
			st := u.stats.get(k.Upstream)
			st.Warm++
			if restart {
				st.Restarts++
			}
			u.stats.mu.Unlock()
			u.stats.metrics.UpstreamSession(k.Upstream, 1, restart)
		},
		OnStop: func(k warm.Key) {
			u.stats.mu.Lock()
			u.stats.get(k.Upstream).Warm--
			u.stats.mu.Unlock()
			u.stats.metrics.UpstreamSession(k.Upstream, -1, false)
		},
	})
}

// observeCall records one tools/call on upstream.
func (u *Connector) observeCall(upstream string, took time.Duration, err error) {
	u.stats.metrics.UpstreamCall(upstream, took, err != nil)
	u.stats.mu.Lock()
	st := u.stats.get(upstream)
	st.Calls++
	st.LastLatency = took
	u.stats.mu.Unlock()
	if err != nil {
		u.stats.failed(upstream, err.Error(), u.now(), true)
	}
}

// failed records upstream's latest failure; call counts it as a failed
// call's (an exit is counted as a restart when the next call starts one).
func (s *stats) failed(upstream, what string, at time.Time, call bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.get(upstream)
	if !st.LastErrorAt.After(at) {
		st.LastError, st.LastErrorAt = what, at
	}
	if call {
		st.Errors++
	}
}

// Stats returns what this process has seen of each upstream.
func (u *Connector) Stats() []Stat {
	u.stats.mu.Lock()
	defer u.stats.mu.Unlock()
	out := make([]Stat, 0, len(u.stats.by))
	for _, st := range u.stats.by {
		out = append(out, *st)
	}
	return out
}
