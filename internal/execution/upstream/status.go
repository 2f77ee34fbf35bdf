package upstream

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/execution/upstream/warm"
	"github.com/airlock-dev/airlock/internal/kit/metrics"
	"github.com/airlock-dev/airlock/store"
)

// Health of the warm sessions (issue 23 item 5): per upstream, what this
// process holds and has seen — reported to the metrics as it happens, and
// written to the store (store.UpstreamHealth, one row per instance and
// upstream) for the operator's side, which runs in other processes: at
// once when a session starts, stops or exits; a call's figures by a
// writer that coalesces them, off the call's path.

// stats is what this process has seen of each upstream.
type stats struct {
	metrics *metrics.Metrics // nil-safe
	db      *store.DB
	log     *slog.Logger
	now     func() time.Time
	mu      sync.Mutex
	wmu     sync.Mutex // one write at a time
	by      map[string]*Stat
	dirty   map[string]bool // calls not yet written
	kick    chan struct{}
	done    chan struct{}
	writer  sync.Once
	closed  sync.Once
	wg      sync.WaitGroup
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

	exitAt time.Time // when the last exit was recorded
	// errCallBegan is when the call whose failure is LastError began;
	// zero when LastError is an exit.
	errCallBegan time.Time
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
	u.stats = &stats{metrics: opts.Metrics, db: u.db, log: u.log, now: u.now, by: map[string]*Stat{}, dirty: map[string]bool{},
		kick: make(chan struct{}, 1), done: make(chan struct{})}
	u.pool = warm.New(&warm.Options{
		Now: u.now,
		OnExit: func(k warm.Key, x *warm.Exit) {
			u.stats.failed(k.Upstream, "exited: "+x.Status, u.now(), time.Time{})
			u.stats.write(k.Upstream)
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
			u.stats.write(k.Upstream)
		},
		OnStop: func(k warm.Key) {
			u.stats.mu.Lock()
			u.stats.get(k.Upstream).Warm--
			u.stats.mu.Unlock()
			u.stats.metrics.UpstreamSession(k.Upstream, -1, false)
			u.stats.write(k.Upstream)
		},
	})
}

// observeCall records one tools/call on upstream, begun at began.
func (u *Connector) observeCall(upstream string, began time.Time, took time.Duration, err error) {
	u.stats.metrics.UpstreamCall(upstream, took, err != nil)
	u.stats.mu.Lock()
	st := u.stats.get(upstream)
	st.Calls++
	st.LastLatency = took
	u.stats.dirty[upstream] = true
	u.stats.mu.Unlock()
	if err != nil {
		u.stats.failed(upstream, err.Error(), u.now(), began)
	}
	u.stats.later()
}

// write writes upstream's row now; a failure is logged (health is not
// worth refusing a call for).
//
// Writes are serialised and each takes its figures when it starts, so the
// last row written is never older than one written before it.
func (s *stats) write(upstream string) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.Lock()
	st := *s.get(upstream)
	delete(s.dirty, upstream)
	s.mu.Unlock()
	h := store.UpstreamHealth{Upstream: st.Upstream, Warm: int64(st.Warm), Restarts: st.Restarts, Calls: st.Calls, Errors: st.Errors,
		LastError: st.LastError, LastErrorAt: st.LastErrorAt, Latency: st.LastLatency, UpdatedAt: s.now()}
	if err := s.db.PutUpstreamHealth(context.Background(), h); err != nil && !errors.Is(err, store.ErrClosed) {
		s.log.Warn("writing upstream health", "upstream", upstream, "err", err)
	}
}

// later has the writer write the rows of calls made since.
func (s *stats) later() {
	s.writer.Do(func() {
		s.wg.Add(1)
		go s.run()
	})
	select {
	case s.kick <- struct{}{}:
	default: // a write is due already; it will take these figures too
	}
}

// run is the writer: it waits for a kick, not on a clock.
func (s *stats) run() {
	defer s.wg.Done()
	for {
		select {
		case <-s.done:
			return
		case <-s.kick:
		}
		s.writeDirty()
	}
}

// writeDirty writes the rows of the upstreams called since their last.
func (s *stats) writeDirty() {
	s.mu.Lock()
	var ids []string
	for id := range s.dirty {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	for _, id := range ids {
		s.write(id)
	}
}

// close stops the writer, after writing what it had not.
func (s *stats) close() {
	s.closed.Do(func() { close(s.done) })
	s.wg.Wait()
	s.writeDirty()
}

// failed records upstream's latest failure: an exit (callBegan zero) or a
// failed call begun at callBegan, counted as one (an exit is counted as a
// restart when the next call starts one). A process that exits mid-call
// fails that call too; which of the two is noticed first, and which of
// their times (each read before this lock) is the later, is up to the
// scheduler, so the exit — the cause — stays the last error whichever
// order they arrive in: a call's failure never replaces an exit recorded
// since the call began, and an exit replaces the failure of any call that
// began before it.
func (s *stats) failed(upstream, what string, at, callBegan time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.get(upstream)
	if !callBegan.IsZero() {
		st.Errors++
		if !st.exitAt.IsZero() && !st.exitAt.Before(callBegan) {
			return
		}
		if !st.LastErrorAt.After(at) {
			st.LastError, st.LastErrorAt, st.errCallBegan = what, at, callBegan
		}
		return
	}
	st.exitAt = at
	causedBy := !st.errCallBegan.IsZero() && !st.errCallBegan.After(at) // a call the exit failed
	if causedBy || !st.LastErrorAt.After(at) {
		st.LastError, st.errCallBegan = what, time.Time{}
		if st.LastErrorAt.Before(at) {
			st.LastErrorAt = at
		}
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
