package declarations

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
)

// MemoryStore is a Store held in memory, for tests and for a server that
// need not remember declarations across restarts. The zero value is not
// usable; call NewMemoryStore.
type MemoryStore struct {
	mu sync.Mutex
	m  map[string]*Declaration
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{m: map[string]*Declaration{}}
}

// Create implements Store.
func (s *MemoryStore) Create(ctx context.Context, d *Declaration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d == nil || d.ID == "" {
		return invalid("id", "required")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[d.ID]; ok {
		return fmt.Errorf("declaration %s: %w", d.ID, ErrExists)
	}
	s.m[d.ID] = d.Clone()
	return nil
}

// Get implements Store.
func (s *MemoryStore) Get(ctx context.Context, id string) (*Declaration, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.m[id]
	if !ok {
		return nil, fmt.Errorf("declaration %s: %w", id, ErrNotFound)
	}
	return d.Clone(), nil
}

// Transition implements Store.
func (s *MemoryStore) Transition(ctx context.Context, id string, from []State, to State, mutate func(*Declaration) error) (*Declaration, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.m[id]
	if !ok {
		return nil, fmt.Errorf("declaration %s: %w", id, ErrNotFound)
	}
	if !slices.Contains(from, cur.State) {
		return cur.Clone(), fmt.Errorf("declaration %s is %s: %w", id, cur.State, ErrState)
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
}

// List implements Store.
func (s *MemoryStore) List(ctx context.Context, f Filter) ([]*Declaration, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	var out []*Declaration
	for _, d := range s.m {
		if f.match(d) {
			out = append(out, d.Clone())
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b *Declaration) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	if f.Limit > 0 && len(out) > f.Limit {
		out = out[:f.Limit]
	}
	return out, nil
}
