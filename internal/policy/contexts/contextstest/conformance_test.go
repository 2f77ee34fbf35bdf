package contextstest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/racetest"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/internal/testkit/childtest"
)

// memStore is a minimal in-memory Store, here only so that the
// conformance suite can be checked against a store known to be right and
// against copies of it with one bug each.
type memStore struct {
	mu         sync.Mutex
	contexts   map[string]*contexts.Context
	sessions   map[string]*contexts.Session
	usage      map[string][]byte
	challenges map[string]time.Time
}

func newMemStore() *memStore {
	return &memStore{
		contexts: map[string]*contexts.Context{}, sessions: map[string]*contexts.Session{},
		usage: map[string][]byte{}, challenges: map[string]time.Time{},
	}
}

func (m *memStore) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	return nil
}

func validContext(c *contexts.Context) error {
	if c.ID == "" || !contexts.ValidPhase(c.Phase) {
		return fmt.Errorf("context %q: %w", c.ID, contexts.ErrInvalid)
	}
	return nil
}

func (m *memStore) EnsureContext(ctx context.Context, c *contexts.Context) (*contexts.Context, error) {
	if err := validContext(c); err != nil {
		return nil, err
	}
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	if _, ok := m.contexts[c.ID]; !ok {
		m.contexts[c.ID] = c.Clone()
	}
	return m.contexts[c.ID].Clone(), nil
}

func (m *memStore) CreateContext(ctx context.Context, c *contexts.Context) error {
	if err := validContext(c); err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if _, ok := m.contexts[c.ID]; ok {
		return contexts.ErrExists
	}
	m.contexts[c.ID] = c.Clone()
	return nil
}

// memGet returns a copy of table[id], so that the caller shares no memory
// with the store.
func memGet[T any](ctx context.Context, m *memStore, table map[string]*T, id string, clone func(*T) *T) (*T, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	v, ok := table[id]
	if !ok {
		return nil, contexts.ErrNotFound
	}
	return clone(v), nil
}

func cloneSession(s *contexts.Session) *contexts.Session {
	c := *s
	return &c
}

func (m *memStore) GetContext(ctx context.Context, id string) (*contexts.Context, error) {
	return memGet(ctx, m, m.contexts, id, (*contexts.Context).Clone)
}

func (m *memStore) UpdateContext(ctx context.Context, id string, mutate func(*contexts.Context) error) (*contexts.Context, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	c, ok := m.contexts[id]
	if !ok {
		return nil, contexts.ErrNotFound
	}
	next := c.Clone()
	if err := mutate(next); err != nil {
		return nil, err
	}
	next = next.Clone()
	next.ID = id
	if err := validContext(next); err != nil {
		return nil, err
	}
	m.contexts[id] = next
	return next.Clone(), nil
}

func (m *memStore) ListContexts(ctx context.Context, principal string) ([]*contexts.Context, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []*contexts.Context
	for _, c := range m.contexts {
		if principal == "" || c.Principal == principal {
			out = append(out, c.Clone())
		}
	}
	slices.SortFunc(out, func(a, b *contexts.Context) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (m *memStore) OpenSession(ctx context.Context, s *contexts.Session, maxOpen int, idle time.Duration) ([]*contexts.Session, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	if _, ok := m.sessions[s.ID]; ok {
		return nil, contexts.ErrExists
	}
	var live, evicted []*contexts.Session
	for _, o := range m.sessions {
		if o.Principal == s.Principal && o.Transport == s.Transport && o.Open(s.CreatedAt, idle) {
			live = append(live, o)
		}
	}
	if maxOpen > 0 && len(live) >= maxOpen {
		slices.SortFunc(live, leastRecentlyUsed)
		for _, o := range live[:len(live)-maxOpen+1] {
			o.ClosedAt, o.CloseReason = s.CreatedAt, contexts.EvictReason
			evicted = append(evicted, cloneSession(o))
		}
	}
	m.sessions[s.ID] = cloneSession(s)
	return evicted, nil
}

// leastRecentlyUsed orders sessions as the cap evicts them.
func leastRecentlyUsed(a, b *contexts.Session) int {
	return cmp.Or(a.LastSeen.Compare(b.LastSeen), a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
}

func (m *memStore) GetSession(ctx context.Context, id string) (*contexts.Session, error) {
	return memGet(ctx, m, m.sessions, id, cloneSession)
}

func (m *memStore) TouchSession(ctx context.Context, id string, now time.Time) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok || !s.ClosedAt.IsZero() {
		return contexts.ErrNotFound
	}
	s.LastSeen = now
	return nil
}

func (m *memStore) CloseSession(ctx context.Context, id, reason string, now time.Time) (bool, error) {
	if err := m.lock(ctx); err != nil {
		return false, err
	}
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok || !s.ClosedAt.IsZero() {
		return false, nil
	}
	s.ClosedAt, s.CloseReason = now, reason
	return true, nil
}

func (m *memStore) CloseIdleSessions(ctx context.Context, idleBefore, now time.Time, reason string) ([]*contexts.Session, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	var ids []string
	for id, s := range m.sessions {
		if s.ClosedAt.IsZero() && s.LastSeen.Before(idleBefore) {
			s.ClosedAt, s.CloseReason = now, reason
			ids = append(ids, id)
		}
	}
	m.mu.Unlock()
	all, _ := m.ListSessions(context.Background(), "", false)
	return slices.DeleteFunc(all, func(s *contexts.Session) bool { return !slices.Contains(ids, s.ID) }), nil
}

func (m *memStore) ListSessions(ctx context.Context, contextID string, openOnly bool) ([]*contexts.Session, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	var out []*contexts.Session
	for _, s := range m.sessions {
		if (contextID == "" || s.ContextID == contextID) && (!openOnly || s.ClosedAt.IsZero()) {
			out = append(out, cloneSession(s))
		}
	}
	slices.SortFunc(out, func(a, b *contexts.Session) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func (m *memStore) UpdateUsage(ctx context.Context, keys []string, fn func(map[string][]byte) (map[string][]byte, error)) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	cur := map[string][]byte{}
	for _, k := range keys {
		if v, ok := m.usage[k]; ok {
			cur[k] = slices.Clone(v)
		}
	}
	next, err := fn(cur)
	if err != nil {
		return err
	}
	for k, v := range next {
		m.usage[k] = slices.Clone(v)
	}
	return nil
}

func (m *memStore) Usage(ctx context.Context, key string) ([]byte, error) {
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	return slices.Clone(m.usage[key]), nil
}

func (m *memStore) UseChallenge(ctx context.Context, nonce string, expires time.Time) error {
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	if _, ok := m.challenges[nonce]; ok {
		return contexts.ErrReplayed
	}
	m.challenges[nonce] = expires
	return nil
}

// The mutants: each embeds a correct store and breaks one promise.
type (
	ensureOverwrites struct{ *memStore }
	mutateErrStores  struct{ *memStore }
	sharesMemory     struct{ *memStore }
	capCheckThenAct  struct {
		*memStore
		counted *arrivals
	}
	capIgnoresIdle struct{ *memStore }
	evictsNewest   struct{ *memStore }
	// capAcrossTransports counts an SSE session against the cap of
	// streamable HTTP ones.
	capAcrossTransports struct{ *memStore }
	usageLostUpdate     struct {
		*memStore
		read *arrivals
	}
	closesNothing struct{ *memStore }
)

func (m ensureOverwrites) EnsureContext(ctx context.Context, c *contexts.Context) (*contexts.Context, error) {
	m.mu.Lock()
	m.contexts[c.ID] = c.Clone()
	m.mu.Unlock()
	return c.Clone(), nil
}

func (m mutateErrStores) UpdateContext(ctx context.Context, id string, mutate func(*contexts.Context) error) (*contexts.Context, error) {
	var merr error
	out, err := m.memStore.UpdateContext(ctx, id, func(c *contexts.Context) error {
		merr = mutate(c)
		return nil
	})
	if merr != nil {
		return nil, merr
	}
	return out, err
}

func (m sharesMemory) GetContext(ctx context.Context, id string) (*contexts.Context, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.contexts[id]; ok {
		return c, nil
	}
	return nil, contexts.ErrNotFound
}

// arrivals lets the mutants below hold a racing caller until enough
// others have reached the same point, so the race they are built to lose
// happens by construction, not when the scheduler happens to interleave
// them (a 1 ms sleep used to stand in).
type arrivals struct {
	mu      sync.Mutex
	n       int
	reached chan struct{} // closed at the want-th arrival
}

// wait records one arrival and, while a race is on, waits until want
// callers have arrived (a minute is a hang guard: the race has them).
// Each mutant always asks for the same want.
func (a *arrivals) wait(want int) {
	if !racetest.Running() {
		return // a call outside a race is no arrival: it would close the gate early
	}
	a.mu.Lock()
	if a.reached == nil {
		a.reached = make(chan struct{})
	}
	if a.n++; a.n == want {
		close(a.reached)
	}
	ch := a.reached
	a.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(time.Minute):
	}
}

// openInSteps is OpenSession with the count, the evictions and the insert
// as separate steps, counting the open sessions counts accepts and
// evicting in order: the mutants' way of getting the cap wrong.
func (m *memStore) openInSteps(ctx context.Context, s *contexts.Session, maxOpen int, counts func(*contexts.Session) bool, order func(a, b *contexts.Session) int, counted *arrivals) ([]*contexts.Session, error) {
	open, _ := m.ListSessions(ctx, "", true)
	live := slices.DeleteFunc(open, func(o *contexts.Session) bool { return !counts(o) })
	if counted != nil {
		// Every racing caller has counted before any inserts: were it only
		// the first maxOpen+1, later callers could evict the excess again
		// and the race would be caught only when scheduling allowed.
		counted.wait(racetest.Callers())
	}
	var evicted []*contexts.Session
	if maxOpen > 0 && len(live) >= maxOpen {
		slices.SortFunc(live, order)
		for _, o := range live[:len(live)-maxOpen+1] {
			if was, _ := m.CloseSession(ctx, o.ID, contexts.EvictReason, s.CreatedAt); was {
				closed, _ := m.GetSession(ctx, o.ID)
				evicted = append(evicted, closed)
			}
		}
	}
	if _, err := m.OpenSession(ctx, s, 0, 0); err != nil {
		return nil, err
	}
	return evicted, nil
}

// OpenSession counts, lets go, evicts and inserts: the race the cap must
// not have.
func (m capCheckThenAct) OpenSession(ctx context.Context, s *contexts.Session, maxOpen int, idle time.Duration) ([]*contexts.Session, error) {
	return m.openInSteps(ctx, s, maxOpen, func(o *contexts.Session) bool {
		return o.Principal == s.Principal && o.Transport == s.Transport && o.Open(s.CreatedAt, idle)
	}, leastRecentlyUsed, m.counted)
}

func (m capIgnoresIdle) OpenSession(ctx context.Context, s *contexts.Session, maxOpen int, _ time.Duration) ([]*contexts.Session, error) {
	return m.memStore.OpenSession(ctx, s, maxOpen, 0)
}

// OpenSession evicts the most recently used sessions instead of the least.
func (m evictsNewest) OpenSession(ctx context.Context, s *contexts.Session, maxOpen int, idle time.Duration) ([]*contexts.Session, error) {
	return m.openInSteps(ctx, s, maxOpen, func(o *contexts.Session) bool {
		return o.Principal == s.Principal && o.Transport == s.Transport && o.Open(s.CreatedAt, idle)
	}, func(a, b *contexts.Session) int { return leastRecentlyUsed(b, a) }, nil)
}

// OpenSession counts the principal's sessions over every transport.
func (m capAcrossTransports) OpenSession(ctx context.Context, s *contexts.Session, maxOpen int, idle time.Duration) ([]*contexts.Session, error) {
	return m.openInSteps(ctx, s, maxOpen, func(o *contexts.Session) bool {
		return o.Principal == s.Principal && o.Open(s.CreatedAt, idle)
	}, leastRecentlyUsed, nil)
}

// UpdateUsage reads, runs fn unlocked, and writes: lost updates.
func (m usageLostUpdate) UpdateUsage(ctx context.Context, keys []string, fn func(map[string][]byte) (map[string][]byte, error)) error {
	cur := map[string][]byte{}
	for _, k := range keys {
		if v, _ := m.Usage(ctx, k); v != nil {
			cur[k] = v
		}
	}
	m.read.wait(2)
	next, err := fn(cur)
	if err != nil {
		return err
	}
	return m.memStore.UpdateUsage(ctx, nil, func(map[string][]byte) (map[string][]byte, error) { return next, nil })
}

func (m closesNothing) CloseIdleSessions(ctx context.Context, idleBefore, now time.Time, reason string) ([]*contexts.Session, error) {
	return nil, nil
}

const brokenEnv = "CONTEXTS_BROKEN_STORE"

// mutants are stores with one bug each, and the conformance check that
// must catch it.
var mutants = map[string]childtest.Mutant[contexts.Store]{
	"ensure overwrites":      {Store: func() contexts.Store { return ensureOverwrites{newMemStore()} }, Caught: "EnsureContext"},
	"mutate error stores":    {Store: func() contexts.Store { return mutateErrStores{newMemStore()} }, Caught: "UpdateContext"},
	"shares memory":          {Store: func() contexts.Store { return sharesMemory{newMemStore()} }, Caught: "ContextNoSharedMemory"},
	"cap check then act":     {Store: func() contexts.Store { return capCheckThenAct{newMemStore(), &arrivals{}} }, Caught: "SessionCapConcurrent"},
	"cap ignores idle":       {Store: func() contexts.Store { return capIgnoresIdle{newMemStore()} }, Caught: "SessionCapIdle"},
	"cap evicts the newest":  {Store: func() contexts.Store { return evictsNewest{newMemStore()} }, Caught: "SessionCap"},
	"cap across transports":  {Store: func() contexts.Store { return capAcrossTransports{newMemStore()} }, Caught: "SessionCap"},
	"usage lost update":      {Store: func() contexts.Store { return usageLostUpdate{newMemStore(), &arrivals{}} }, Caught: "UsageConcurrent"},
	"closes no idle session": {Store: func() contexts.Store { return closesNothing{newMemStore()} }, Caught: "CloseIdleSessions"},
}

// TestConformanceOnMemoryStore: the suite passes a store known to be right.
func TestConformanceOnMemoryStore(t *testing.T) {
	StoreConformance(t, func(*testing.T) (contexts.Store, contexts.Store) {
		m := newMemStore()
		return m, m
	})
}

// TestConformanceCatchesBrokenStores runs StoreConformance in a child
// process against each mutant and expects the named check to fail: a
// suite that passes a broken store would vouch for a broken SQLite one.
func TestConformanceCatchesBrokenStores(t *testing.T) {
	childtest.CatchMutants(t, brokenEnv, mutants)
}

func TestBrokenStoreChild(t *testing.T) {
	mu := childtest.ChildMutant(t, brokenEnv, mutants)
	StoreConformance(t, func(*testing.T) (contexts.Store, contexts.Store) {
		st := mu.Store()
		return st, st
	})
}
