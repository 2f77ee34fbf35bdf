package declarationstest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/kit/racetest"
	"github.com/airlock-dev/airlock/internal/testkit/childtest"
)

const brokenEnv = "DECLARATIONS_BROKEN_STORE"

// mutants are stores with one bug each, and the conformance check that
// must catch it.
var mutants = map[string]childtest.Mutant[declarations.Store]{
	"ignores from":         {Store: func() declarations.Store { return ignoresFrom{NewMemoryStore()} }, Caught: "TransitionCAS"},
	"no state on ErrState": {Store: func() declarations.Store { return noStateOnErr{NewMemoryStore()} }, Caught: "TransitionCAS"},
	"shares memory":        {Store: func() declarations.Store { return sharesMemory{NewMemoryStore()} }, Caught: "NoSharedMemory"},
	"keeps seconds":        {Store: func() declarations.Store { return keepsSeconds{NewMemoryStore()} }, Caught: "CreateGet"},
	"ignores context":      {Store: func() declarations.Store { return ignoresContext{NewMemoryStore()} }, Caught: "ContextCanceled"},
	"unordered list":       {Store: func() declarations.Store { return unordered{NewMemoryStore()} }, Caught: "List"},
	"check then act":       {Store: func() declarations.Store { return checkThenAct{NewMemoryStore(), &checkers{}} }, Caught: "TransitionConcurrent"},
}

// TestConformanceCatchesBrokenStores runs StoreConformance in a child
// process against each mutant and expects the named check to fail: a
// suite that passes a broken store would vouch for a broken SQLite one.
func TestConformanceCatchesBrokenStores(t *testing.T) {
	childtest.CatchMutants(t, brokenEnv, mutants)
}

func TestBrokenStoreChild(t *testing.T) {
	mu := childtest.ChildMutant(t, brokenEnv, mutants)
	StoreConformance(t, func(*testing.T) declarations.Store { return mu.Store() })
}

type ignoresFrom struct{ *MemoryStore }

// Transition moves the declaration from whatever state it is in.
func (s ignoresFrom) Transition(ctx context.Context, id string, _ []declarations.State, to declarations.State, mutate func(*declarations.Declaration) error) (*declarations.Declaration, error) {
	cur, err := s.MemoryStore.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.MemoryStore.Transition(ctx, id, []declarations.State{cur.State}, to, mutate)
}

type noStateOnErr struct{ *MemoryStore }

func (s noStateOnErr) Transition(ctx context.Context, id string, from []declarations.State, to declarations.State, mutate func(*declarations.Declaration) error) (*declarations.Declaration, error) {
	d, err := s.MemoryStore.Transition(ctx, id, from, to, mutate)
	if err != nil {
		return nil, err
	}
	return d, nil
}

type sharesMemory struct{ *MemoryStore }

func (s sharesMemory) Get(_ context.Context, id string) (*declarations.Declaration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.m[id]; ok {
		return d, nil
	}
	return nil, declarations.ErrNotFound
}

type keepsSeconds struct{ *MemoryStore }

func (s keepsSeconds) Create(ctx context.Context, d *declarations.Declaration) error {
	c := d.Clone()
	c.CreatedAt = c.CreatedAt.Truncate(time.Second)
	return s.MemoryStore.Create(ctx, c)
}

type ignoresContext struct{ *MemoryStore }

func (s ignoresContext) Get(_ context.Context, id string) (*declarations.Declaration, error) {
	return s.MemoryStore.Get(context.Background(), id)
}

type unordered struct{ *MemoryStore }

func (s unordered) List(ctx context.Context, f declarations.Filter) ([]*declarations.Declaration, error) {
	limit := f.Limit
	f.Limit = 0
	out, err := s.MemoryStore.List(ctx, f)
	slices.Reverse(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, err
}

// checkThenAct checks the state, waits for another caller to have checked
// too when a Race is on, then writes: every caller that checked before the
// first write wins. The wait is for that event, not for a duration, so the
// mutant shows its bug however the machine schedules the racers.
type checkThenAct struct {
	*MemoryStore
	c *checkers
}

// checkers counts the callers past the check.
type checkers struct {
	mu      sync.Mutex
	checked int
	two     chan struct{} // closed when a second caller has checked
}

func (c *checkers) passed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.two == nil {
		c.two = make(chan struct{})
	}
	if c.checked++; c.checked == 2 {
		close(c.two)
	}
	return c.two
}

func (s checkThenAct) Transition(ctx context.Context, id string, from []declarations.State, to declarations.State, mutate func(*declarations.Declaration) error) (*declarations.Declaration, error) {
	d, err := s.MemoryStore.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(from, d.State) {
		return d, declarations.ErrState
	}
	two := s.c.passed()
	if racetest.Running() {
		select {
		case <-two:
		case <-time.After(time.Minute): // a hang guard: a Race has more callers coming
		}
	}
	if mutate != nil {
		if err := mutate(d); err != nil {
			return nil, err
		}
	}
	d.State = to
	s.mu.Lock()
	s.m[id] = d.Clone()
	s.mu.Unlock()
	return d, nil
}
