// Package warm keeps upstream MCP sessions alive between calls (issue 23
// item 1): a stdio upstream's sandboxed process, an HTTP upstream's MCP
// session. It knows nothing of MCP or the sandbox; package upstream
// starts the sessions and runs the calls on them.
//
// # Invariant
//
// A session is reached only through its [Key], and the key names whose it
// is: the upstream, its configuration, the scope (a runtime context, a
// principal, or — only for an upstream declared stateless — everyone),
// the principal and the policy its egress was bound to when it started.
// So a call never reaches a session another context or principal started
// (TestWarmStateStaysInItsContext in server/), and a session is never
// used under a configuration or a policy other than the one it was
// started with: a reload that changes either starts a new one.
//
// Calls on one session are serialised (one in flight at a time), so what
// a call sees of the session is the result of earlier calls of the same
// key only. The number of sessions is bounded globally and per principal;
// at a bound the least recently used idle session is stopped, and with
// none idle the call is refused ([ErrFull]). A session idle for its idle
// timeout is stopped. A session whose process ends by itself is removed
// at once and reported ([Options.OnExit]: the audit's upstream.exited);
// the next call starts a new one. [Pool.StopAll] (the kill switch, the
// process's shutdown) and [Pool.StopScope] stop sessions and return only
// once they are gone.
//
// # Limits
//
// Timers stop idle sessions: when one fires late, a session lives a little
// longer, never shorter; no verdict depends on them ([Pool.ExpireIdle] is
// the same sweep on a given clock, for tests).
package warm

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"
)

// Errors of the pool.
var (
	// ErrFull: the bound on sessions (global or the principal's) is
	// reached and every session is in use.
	ErrFull = errors.New("too many warm upstream sessions in use")
	// ErrStopped: the pool was closed.
	ErrStopped = errors.New("warm sessions stopped")
)

// Key names one session. Every field is part of its identity.
type Key struct {
	// Upstream is the upstream's id.
	Upstream string
	// Config fingerprints the upstream's configuration (command,
	// environment sources, hosts, URL, limits).
	Config string
	// Scope is "context:<id>", "principal:<name>" or "shared".
	Scope string
	// Principal is whose bound the session counts against ("" for a
	// shared one).
	Principal string
	// Policy is the policy (name and version) the session's egress is
	// judged by.
	Policy string
}

// Conn is one started session. Stop and Exit may be called from any
// goroutine.
type Conn interface {
	// Done is closed once the session has ended, by itself or by Stop;
	// nil means it ends only by Stop (an HTTP session).
	Done() <-chan struct{}
	// Stop ends the session and returns once it is gone.
	Stop()
	// Exit says how a session that is Done ended; nil when Stop ended it.
	Exit() *Exit
}

// Exit is how a session's process ended by itself.
type Exit struct {
	// Status is its exit status ("exit 3", "signal SIGKILL (memory)").
	Status string
	// Stderr are the last lines it wrote to stderr (bounded).
	Stderr []string
}

// Limits are a call's bounds on the pool, read from the configuration in
// force at each call (so a reload applies them); a zero field takes its
// default.
type Limits struct {
	// Idle is how long the call's session may stay unused (default 5
	// minutes).
	Idle time.Duration
	// Max bounds the sessions of the process (default 64).
	Max int
	// MaxPerPrincipal bounds one principal's (default 8).
	MaxPerPrincipal int
}

// Options configure a Pool; nil means defaults.
type Options struct {
	Now func() time.Time
	// OnExit is told of a session whose process ended by itself, after
	// it is removed and before the call that found it broken returns.
	OnExit func(Key, *Exit)
	// OnStart is told of every session started (restart: the key's
	// last session ended by itself).
	OnStart func(k Key, restart bool)
	// OnStop is told of every session removed, however.
	OnStop func(Key)
}

// Defaults of Limits.
const (
	DefaultIdle            = 5 * time.Minute
	DefaultMax             = 64
	DefaultMaxPerPrincipal = 8
)

func (l Limits) withDefaults() Limits {
	if l.Idle <= 0 {
		l.Idle = DefaultIdle
	}
	if l.Max <= 0 {
		l.Max = DefaultMax
	}
	if l.MaxPerPrincipal <= 0 {
		l.MaxPerPrincipal = DefaultMaxPerPrincipal
	}
	return l
}

// maxCrashed bounds the keys remembered as crashed (for OnStart's restart).
const maxCrashed = 1024

// Pool holds the warm sessions of one process. It is safe for concurrent
// use.
type Pool struct {
	opts Options

	mu      sync.Mutex
	entries map[Key]*entry
	crashed map[Key]bool // the key's last session ended by itself
	closed  bool
}

// entry is one session and its bookkeeping; mu guards the fields below
// sem.
type entry struct {
	key  Key
	sem  chan struct{} // one call in flight
	gone chan struct{} // closed once the session is stopped and reported

	ready chan struct{} // closed once start returned
	conn  Conn
	err   error // start's error

	users    int // calls holding or waiting for sem
	lastUsed time.Time
	idle     time.Duration
	timer    *time.Timer
	stopping bool
	calls    int64
}

// New returns an empty pool.
func New(opts *Options) *Pool {
	p := &Pool{entries: map[Key]*entry{}, crashed: map[Key]bool{}}
	if opts != nil {
		p.opts = *opts
	}
	if p.opts.Now == nil {
		p.opts.Now = time.Now
	}
	return p
}

// discarded marks an error after which the session is not used again.
type discarded struct{ err error }

func (d *discarded) Error() string { return d.err.Error() }
func (d *discarded) Unwrap() error { return d.err }

// Discard wraps fn's error so that Do stops the session (its transport
// broke, it sent too much, it timed out): the next call starts a new one.
func Discard(err error) error {
	if err == nil {
		return nil
	}
	return &discarded{err}
}

// Do runs fn on key's session, started with start when there is none
// (fresh is then true), within lim. An error of start or fn is returned as is (unwrapped from
// Discard); a session fn discarded, or whose process ended, is stopped
// and reported before Do returns.
func (p *Pool) Do(ctx context.Context, key Key, lim Limits, start func(context.Context) (Conn, error), fn func(c Conn, fresh bool) error) error {
	e, creator, err := p.enter(key, lim.withDefaults())
	if err != nil {
		return err
	}
	defer p.leave(e)
	fresh := false
	if creator {
		fresh = true
		p.start(ctx, e, start)
	} else {
		select {
		case <-e.ready:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	if e.err != nil {
		return e.err
	}
	select {
	case e.sem <- struct{}{}:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	defer func() { <-e.sem }()
	select {
	case <-e.gone:
		// It ended while this call waited: start afresh, once.
		return p.Do(ctx, key, lim, start, fn)
	default:
	}
	err = fn(e.conn, fresh)
	p.mu.Lock()
	e.calls++
	p.mu.Unlock()
	var d *discarded
	if errors.As(err, &d) {
		p.stop(e)
		return d.err
	}
	return err
}

// enter finds or creates key's entry and counts the call as its user;
// creator is true when the caller must start it.
func (p *Pool) enter(key Key, lim Limits) (e *entry, creator bool, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, false, ErrStopped
	}
	if e = p.entries[key]; e != nil {
		e.users++
		if e.timer != nil {
			e.timer.Stop()
			e.timer = nil
		}
		p.mu.Unlock()
		return e, false, nil
	}
	evict, err := p.makeRoom(key.Principal, lim)
	if err != nil {
		p.mu.Unlock()
		return nil, false, err
	}
	e = &entry{key: key, sem: make(chan struct{}, 1), gone: make(chan struct{}), ready: make(chan struct{}), users: 1, idle: lim.Idle}
	p.entries[key] = e
	for _, v := range evict {
		v.stopping = true
		delete(p.entries, v.key)
	}
	p.mu.Unlock()
	for _, v := range evict {
		p.finish(v)
	}
	return e, true, nil
}

// makeRoom picks the idle sessions to stop so that one more of principal
// fits both bounds; ErrFull when not enough are idle. p.mu is held.
func (p *Pool) makeRoom(principal string, lim Limits) ([]*entry, error) {
	var idle []*entry
	total, mine := 0, 0
	for _, e := range p.entries {
		total++
		if principal != "" && e.key.Principal == principal {
			mine++
		}
		if e.users == 0 && isReady(e) {
			idle = append(idle, e)
		}
	}
	// Least recently used first.
	sort.Slice(idle, func(i, j int) bool { return idle[i].lastUsed.Before(idle[j].lastUsed) })
	var out []*entry
	if principal != "" {
		for _, e := range idle {
			if mine < lim.MaxPerPrincipal {
				break
			}
			if e.key.Principal == principal {
				out = append(out, e)
				mine--
				total--
			}
		}
		if mine >= lim.MaxPerPrincipal {
			return nil, ErrFull
		}
	}
	for _, e := range idle {
		if total < lim.Max {
			break
		}
		if !contains(out, e) {
			out = append(out, e)
			total--
		}
	}
	if total >= lim.Max {
		return nil, ErrFull
	}
	return out, nil
}

func contains(list []*entry, e *entry) bool {
	for _, x := range list {
		if x == e {
			return true
		}
	}
	return false
}

func isReady(e *entry) bool {
	select {
	case <-e.ready:
		return e.err == nil
	default:
		return false
	}
}

// start starts e's session; a failure removes e (the next call tries
// again).
func (p *Pool) start(ctx context.Context, e *entry, start func(context.Context) (Conn, error)) {
	conn, err := start(ctx)
	p.mu.Lock()
	e.conn, e.err = conn, err
	restart := p.crashed[e.key]
	if err != nil {
		if p.entries[e.key] == e {
			delete(p.entries, e.key)
		}
		e.stopping = true
		close(e.gone)
	} else {
		delete(p.crashed, e.key)
	}
	closed := p.closed
	p.mu.Unlock()
	close(e.ready)
	if err != nil {
		return
	}
	if p.opts.OnStart != nil {
		p.opts.OnStart(e.key, restart)
	}
	if done := conn.Done(); done != nil {
		go p.watch(e, done)
	}
	if closed {
		p.stop(e) // StopAll ran while it started
	}
}

// watch waits for e's session to end and reports an end it did not
// order. It blocks on the session's own signal: no polling.
func (p *Pool) watch(e *entry, done <-chan struct{}) {
	<-done
	p.mu.Lock()
	if p.entries[e.key] == e {
		delete(p.entries, e.key)
	}
	e.stopping = true
	if e.timer != nil {
		e.timer.Stop()
	}
	x := e.conn.Exit()
	if x != nil {
		if len(p.crashed) >= maxCrashed {
			clear(p.crashed) // only the restart count loses a mark
		}
		p.crashed[e.key] = true
	}
	p.mu.Unlock()
	if x != nil && p.opts.OnExit != nil {
		p.opts.OnExit(e.key, x)
	}
	if p.opts.OnStop != nil {
		p.opts.OnStop(e.key)
	}
	close(e.gone)
}

// leave ends one call's use of e; the last user arms its idle timer.
func (p *Pool) leave(e *entry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.users--
	if e.users > 0 || e.stopping || !isReady(e) {
		return
	}
	e.lastUsed = p.opts.Now()
	if e.idle > 0 {
		e.timer = time.AfterFunc(e.idle, func() { p.ExpireIdle(p.opts.Now()) })
	}
}

// stop removes e and stops its session, returning once it is gone.
func (p *Pool) stop(e *entry) {
	p.mu.Lock()
	if e.stopping {
		p.mu.Unlock()
		<-e.gone
		return
	}
	e.stopping = true
	if p.entries[e.key] == e {
		delete(p.entries, e.key)
	}
	p.mu.Unlock()
	p.finish(e)
}

// finish stops a removed entry's session and waits until it is reported.
func (p *Pool) finish(e *entry) {
	<-e.ready
	if e.err != nil {
		return
	}
	e.conn.Stop()
	if e.conn.Done() == nil {
		if p.opts.OnStop != nil {
			p.opts.OnStop(e.key)
		}
		close(e.gone)
	}
	<-e.gone
}

// ExpireIdle stops every session unused since before now minus its idle
// timeout.
func (p *Pool) ExpireIdle(now time.Time) int {
	return p.stopWhere(func(e *entry) bool {
		return e.users == 0 && isReady(e) && e.idle > 0 && !now.Before(e.lastUsed.Add(e.idle))
	})
}

// StopAll stops every session (the kill switch) and returns once they
// are gone; sessions started later are allowed (the callers' own checks
// refuse them while the switch is engaged).
func (p *Pool) StopAll() int { return p.stopWhere(func(*entry) bool { return true }) }

// StopScope stops the sessions of one scope (a context's, when it ends).
func (p *Pool) StopScope(scope string) int {
	return p.stopWhere(func(e *entry) bool { return e.key.Scope == scope })
}

// Close stops every session and refuses new ones.
func (p *Pool) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.StopAll()
}

func (p *Pool) stopWhere(match func(*entry) bool) int {
	p.mu.Lock()
	var list []*entry
	for _, e := range p.entries {
		if !e.stopping && match(e) {
			list = append(list, e)
		}
	}
	p.mu.Unlock()
	for _, e := range list {
		p.stop(e)
	}
	return len(list)
}

// Info is one session as Snapshot reports it.
type Info struct {
	Key      Key
	Busy     bool
	Calls    int64
	LastUsed time.Time
}

// Snapshot lists the started sessions, by upstream and scope.
func (p *Pool) Snapshot() []Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Info
	for _, e := range p.entries {
		if !isReady(e) {
			continue
		}
		out = append(out, Info{Key: e.key, Busy: e.users > 0, Calls: e.calls, LastUsed: e.lastUsed})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key.Upstream != out[j].Key.Upstream {
			return out[i].Key.Upstream < out[j].Key.Upstream
		}
		return out[i].Key.Scope < out[j].Key.Scope
	})
	return out
}
