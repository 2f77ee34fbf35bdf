package warm_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/execution/upstream/warm"
)

// fake is a session whose end the test decides: crash ends it by itself.
type fake struct {
	name    string
	done    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	stopped bool
	exit    *warm.Exit
}

func newFake(name string) *fake { return &fake{name: name, done: make(chan struct{})} }

func (f *fake) Done() <-chan struct{} { return f.done }
func (f *fake) Stop() {
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	f.once.Do(func() { close(f.done) })
}
func (f *fake) Exit() *warm.Exit {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.exit
}
func (f *fake) crash(status string) {
	f.mu.Lock()
	f.exit = &warm.Exit{Status: status}
	f.mu.Unlock()
	f.once.Do(func() { close(f.done) })
}
func (f *fake) isStopped() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stopped
}

// recorder is a pool whose starts, exits and stops the test reads.
type recorder struct {
	mu      sync.Mutex
	started []*fake
	exits   []string
	stops   int
	now     time.Time
	pool    *warm.Pool
}

func newRecorder() *recorder {
	r := &recorder{now: time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)}
	r.pool = warm.New(&warm.Options{
		Now: func() time.Time { r.mu.Lock(); defer r.mu.Unlock(); return r.now },
		OnExit: func(k warm.Key, x *warm.Exit) {
			r.mu.Lock()
			r.exits = append(r.exits, k.Scope+" "+x.Status)
			r.mu.Unlock()
		},
		OnStop: func(warm.Key) { r.mu.Lock(); r.stops++; r.mu.Unlock() },
	})
	return r
}

func (r *recorder) advance(d time.Duration) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now = r.now.Add(d)
	return r.now
}

// use runs one call on key's session and returns the session it ran on.
func (r *recorder) use(t *testing.T, key warm.Key, lim warm.Limits) (*fake, error) {
	t.Helper()
	var got *fake
	err := r.pool.Do(context.Background(), key, lim, func(context.Context) (warm.Conn, error) {
		f := newFake(key.Scope)
		r.mu.Lock()
		r.started = append(r.started, f)
		r.mu.Unlock()
		return f, nil
	}, func(c warm.Conn, _ bool) error {
		got = c.(*fake)
		return nil
	})
	return got, err
}

func key(scope, principal string) warm.Key {
	return warm.Key{Upstream: "mem", Config: "c1", Scope: scope, Principal: principal, Policy: "p@1"}
}

// TestPoolKeysAreSeparate: one session per key, reused by the key's calls
// and never by another key's, whichever field differs.
func TestPoolKeysAreSeparate(t *testing.T) {
	r := newRecorder()
	base := key("context:a", "alice")
	variants := map[string]warm.Key{"base": base}
	for name, edit := range map[string]func(*warm.Key){
		"scope":     func(k *warm.Key) { k.Scope = "context:b" },
		"principal": func(k *warm.Key) { k.Principal = "bob" },
		"policy":    func(k *warm.Key) { k.Policy = "p@2" },
		"config":    func(k *warm.Key) { k.Config = "c2" },
		"upstream":  func(k *warm.Key) { k.Upstream = "other" },
	} {
		k := base
		edit(&k)
		variants[name] = k
	}
	seen := map[*fake]string{}
	for name, k := range variants {
		a, err := r.use(t, k, warm.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := r.use(t, k, warm.Limits{})
		if a != b {
			t.Errorf("%s: a second call started a new session", name)
		}
		if other, ok := seen[a]; ok {
			t.Errorf("%s shares a session with %s", name, other)
		}
		seen[a] = name
	}
	if len(r.started) != len(variants) {
		t.Fatalf("%d sessions started for %d keys", len(r.started), len(variants))
	}
}

// TestPoolBounds: at a bound the least recently used idle session is
// stopped (globally, then per principal); with none idle the call is
// refused with ErrFull.
func TestPoolBounds(t *testing.T) {
	r := newRecorder()
	lim := warm.Limits{Max: 3, MaxPerPrincipal: 2}
	a1, _ := r.use(t, key("context:a1", "alice"), lim)
	r.advance(time.Second)
	a2, _ := r.use(t, key("context:a2", "alice"), lim)
	r.advance(time.Second)
	// A third of alice's: her least recently used (a1) goes.
	if _, err := r.use(t, key("context:a3", "alice"), lim); err != nil {
		t.Fatal(err)
	}
	if !a1.isStopped() || a2.isStopped() {
		t.Fatalf("per principal: a1 stopped %v, a2 stopped %v", a1.isStopped(), a2.isStopped())
	}
	r.advance(time.Second)
	b1, _ := r.use(t, key("context:b1", "bob"), lim)
	// The process holds 3: bob's second evicts the oldest idle one (a2).
	r.advance(time.Second)
	if _, err := r.use(t, key("context:b2", "bob"), lim); err != nil {
		t.Fatal(err)
	}
	if !a2.isStopped() || b1.isStopped() {
		t.Fatalf("global: a2 stopped %v, b1 stopped %v", a2.isStopped(), b1.isStopped())
	}
	// Every session busy: the next key is refused.
	hold := make(chan struct{})
	var wg sync.WaitGroup
	for _, k := range []warm.Key{key("context:a3", "alice"), key("context:b1", "bob"), key("context:b2", "bob")} {
		entered := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.pool.Do(context.Background(), k, lim, nil, func(warm.Conn, bool) error { close(entered); <-hold; return nil })
		}()
		<-entered
	}
	_, err := r.use(t, key("context:c", "carol"), lim)
	close(hold)
	wg.Wait()
	if !errors.Is(err, warm.ErrFull) {
		t.Fatalf("all busy: %v", err)
	}
}

// TestPoolIdleExpiry: a session unused for its idle timeout is stopped,
// one used since is not.
func TestPoolIdleExpiry(t *testing.T) {
	r := newRecorder()
	lim := warm.Limits{Idle: time.Minute}
	old, _ := r.use(t, key("context:old", "alice"), lim)
	r.advance(30 * time.Second)
	fresh, _ := r.use(t, key("context:fresh", "alice"), lim)
	if n := r.pool.ExpireIdle(r.advance(30 * time.Second)); n != 1 || !old.isStopped() || fresh.isStopped() {
		t.Fatalf("expired %d: old stopped %v, fresh stopped %v", n, old.isStopped(), fresh.isStopped())
	}
	again, _ := r.use(t, key("context:old", "alice"), lim)
	if again == old {
		t.Fatal("an expired session was used again")
	}
}

// TestPoolCrashReportedAndRestarted: a session that ends by itself is
// reported once (OnExit) and removed; the next call starts another. A
// session fn discards is stopped before Do returns. Stops the pool orders
// are not reported as exits.
func TestPoolCrashReportedAndRestarted(t *testing.T) {
	r := newRecorder()
	k := key("context:a", "alice")
	first, _ := r.use(t, k, warm.Limits{})
	// A crash while in use: fn sees the broken transport and discards.
	err := r.pool.Do(context.Background(), k, warm.Limits{}, nil, func(c warm.Conn, _ bool) error {
		c.(*fake).crash("exit 3")
		return warm.Discard(errors.New("EOF"))
	})
	if err == nil || err.Error() != "EOF" {
		t.Fatalf("discarded call: %v", err)
	}
	r.mu.Lock()
	exits := append([]string(nil), r.exits...)
	r.mu.Unlock()
	if len(exits) != 1 || exits[0] != "context:a exit 3" {
		t.Fatalf("exits reported before Do returned: %q", exits)
	}
	second, _ := r.use(t, k, warm.Limits{})
	if second == first {
		t.Fatal("the crashed session was used again")
	}
	if n := r.pool.StopAll(); n != 1 || !second.isStopped() {
		t.Fatalf("StopAll stopped %d", n)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.exits) != 1 || r.stops != 2 {
		t.Fatalf("after StopAll: exits %q, stops %d", r.exits, r.stops)
	}
}

// TestPoolClosed: after Close nothing starts.
func TestPoolClosed(t *testing.T) {
	r := newRecorder()
	s, _ := r.use(t, key("context:a", "alice"), warm.Limits{})
	r.pool.Close()
	if !s.isStopped() {
		t.Fatal("Close left a session running")
	}
	if _, err := r.use(t, key("context:a", "alice"), warm.Limits{}); !errors.Is(err, warm.ErrStopped) {
		t.Fatalf("after Close: %v", err)
	}
}
