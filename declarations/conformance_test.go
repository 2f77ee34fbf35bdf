package declarations

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

const brokenEnv = "DECLARATIONS_BROKEN_STORE"

// mutants are stores with one bug each, and the conformance check that
// must catch it.
var mutants = map[string]struct {
	store  func() Store
	caught string
}{
	"ignores from":         {func() Store { return ignoresFrom{NewMemoryStore()} }, "TransitionCAS"},
	"no state on ErrState": {func() Store { return noStateOnErr{NewMemoryStore()} }, "TransitionCAS"},
	"shares memory":        {func() Store { return sharesMemory{NewMemoryStore()} }, "NoSharedMemory"},
	"keeps seconds":        {func() Store { return keepsSeconds{NewMemoryStore()} }, "CreateGet"},
	"ignores context":      {func() Store { return ignoresContext{NewMemoryStore()} }, "ContextCanceled"},
	"unordered list":       {func() Store { return unordered{NewMemoryStore()} }, "List"},
	"check then act":       {func() Store { return checkThenAct{NewMemoryStore()} }, "TransitionConcurrent"},
}

// TestConformanceCatchesBrokenStores runs StoreConformance in a child
// process against each mutant and expects the named check to fail: a
// suite that passes a broken store would vouch for a broken SQLite one.
func TestConformanceCatchesBrokenStores(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a test process per mutant")
	}
	for name, mu := range mutants {
		t.Run(name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenStoreChild$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), brokenEnv+"="+name)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the conformance suite passed a store that %s", name)
			}
			if !strings.Contains(string(out), "--- FAIL: TestBrokenStoreChild/"+mu.caught+" ") {
				t.Errorf("%s was not caught by %s:\n%s", name, mu.caught, out)
			}
		})
	}
}

func TestBrokenStoreChild(t *testing.T) {
	name := os.Getenv(brokenEnv)
	if name == "" {
		t.Skip("run by TestConformanceCatchesBrokenStores")
	}
	StoreConformance(t, func(*testing.T) Store { return mutants[name].store() })
}

type ignoresFrom struct{ *MemoryStore }

func (s ignoresFrom) Transition(ctx context.Context, id string, _ []State, to State, mutate func(*Declaration) error) (*Declaration, error) {
	return s.MemoryStore.Transition(ctx, id, States(), to, mutate)
}

type noStateOnErr struct{ *MemoryStore }

func (s noStateOnErr) Transition(ctx context.Context, id string, from []State, to State, mutate func(*Declaration) error) (*Declaration, error) {
	d, err := s.MemoryStore.Transition(ctx, id, from, to, mutate)
	if err != nil {
		return nil, err
	}
	return d, nil
}

type sharesMemory struct{ *MemoryStore }

func (s sharesMemory) Get(_ context.Context, id string) (*Declaration, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d, ok := s.m[id]; ok {
		return d, nil
	}
	return nil, ErrNotFound
}

type keepsSeconds struct{ *MemoryStore }

func (s keepsSeconds) Create(ctx context.Context, d *Declaration) error {
	c := d.Clone()
	c.CreatedAt = c.CreatedAt.Truncate(time.Second)
	return s.MemoryStore.Create(ctx, c)
}

type ignoresContext struct{ *MemoryStore }

func (s ignoresContext) Get(_ context.Context, id string) (*Declaration, error) {
	return s.MemoryStore.Get(context.Background(), id)
}

type unordered struct{ *MemoryStore }

func (s unordered) List(ctx context.Context, f Filter) ([]*Declaration, error) {
	limit := f.Limit
	f.Limit = 0
	out, err := s.MemoryStore.List(ctx, f)
	slices.Reverse(out)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, err
}

// checkThenAct checks the state, lets others run, then writes: every
// caller that checked before the first write wins.
type checkThenAct struct{ *MemoryStore }

func (s checkThenAct) Transition(ctx context.Context, id string, from []State, to State, mutate func(*Declaration) error) (*Declaration, error) {
	d, err := s.MemoryStore.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(from, d.State) {
		return d, ErrState
	}
	for range 10 {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
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
