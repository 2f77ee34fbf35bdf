package declarationstest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/airlock-dev/airlock/declarations"
)

// MemoryStore is a [declarations.Store] held in memory, for tests: the
// Manager's own tests run on it, and the conformance suite checks itself
// against it. The zero value is not usable; call NewMemoryStore.
type MemoryStore struct {
	mu sync.Mutex
	m  map[string]*declarations.Declaration
}

var _ declarations.Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{m: map[string]*declarations.Declaration{}}
}

// Create implements Store.
func (s *MemoryStore) Create(ctx context.Context, d *declarations.Declaration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d == nil || d.ID == "" {
		return &declarations.FieldError{Field: "id", Reason: "required"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[d.ID]; ok {
		return fmt.Errorf("declaration %s: %w", d.ID, declarations.ErrExists)
	}
	s.m[d.ID] = d.Clone()
	return nil
}

// Get implements Store.
func (s *MemoryStore) Get(ctx context.Context, id string) (*declarations.Declaration, error) {
	return s.withStored(ctx, id, func(d *declarations.Declaration) (*declarations.Declaration, error) {
		return d.Clone(), nil
	})
}

// Transition implements Store.
func (s *MemoryStore) Transition(ctx context.Context, id string, from []declarations.State, to declarations.State, mutate func(*declarations.Declaration) error) (*declarations.Declaration, error) {
	return s.withStored(ctx, id, func(cur *declarations.Declaration) (*declarations.Declaration, error) {
		if !slices.Contains(from, cur.State) {
			return cur.Clone(), fmt.Errorf("declaration %s is %s: %w", id, cur.State, declarations.ErrState)
		}
		next := cur.Clone()
		if mutate != nil {
			if err := mutate(next); err != nil {
				return nil, err
			}
		}
		next = next.Clone() // mutate may have kept a pointer
		next.ID = id
		next.State = to
		s.m[id] = next
		return next.Clone(), nil
	})
}

// withStored runs fn on the stored declaration id under the lock, the
// context checked first; a missing id is ErrNotFound, as the SQL stores
// answer.
func (s *MemoryStore) withStored(ctx context.Context, id string, fn func(*declarations.Declaration) (*declarations.Declaration, error)) (*declarations.Declaration, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.m[id]
	if !ok {
		return nil, fmt.Errorf("declaration %s: %w", id, declarations.ErrNotFound)
	}
	return fn(d)
}

// List implements Store.
func (s *MemoryStore) List(ctx context.Context, f declarations.Filter) ([]*declarations.Declaration, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	var out []*declarations.Declaration
	for _, d := range s.m {
		if match(&f, d) {
			out = append(out, d.Clone())
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b *declarations.Declaration) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}

// match reports whether d passes the filter's ContextID and States.
func match(f *declarations.Filter, d *declarations.Declaration) bool {
	if f.ContextID != "" && d.ContextID != f.ContextID {
		return false
	}
	if len(f.States) == 0 {
		return true
	}
	for _, s := range f.States {
		if d.State == s {
			return true
		}
	}
	return false
}
