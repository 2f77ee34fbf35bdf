package declarations

import "context"

// Store keeps declarations. The Manager is its only writer; a Store checks
// no lifecycle rule but the compare-and-swap on the state, which is what
// makes an approval single-use.
//
// Concurrency contract: every method is atomic and safe for concurrent
// use, also across processes sharing one database. Values passed in and
// returned are never retained or shared: a caller may modify what it gets.
// declarationstest.StoreConformance checks all of this; every
// implementation must pass it.
type Store interface {
	// Create stores a new declaration. An empty ID is ErrInvalid; an ID
	// already stored is ErrExists.
	Create(ctx context.Context, d *Declaration) error
	// Get returns the declaration, or ErrNotFound.
	Get(ctx context.Context, id string) (*Declaration, error)
	// Transition atomically: loads the declaration (ErrNotFound); if its
	// state is not in from, returns the stored declaration together with
	// an error wrapping ErrState, changing nothing; otherwise calls mutate
	// (when not nil) on a copy, and if mutate returns an error, returns
	// that error unchanged and nil, changing nothing; otherwise sets the
	// copy's State to to, keeps its ID, stores it and returns it.
	//
	// mutate runs inside the atomic section: it must be quick, must not
	// call the Store, and may run more than once if the implementation
	// retries a conflicting write.
	Transition(ctx context.Context, id string, from []State, to State, mutate func(*Declaration) error) (*Declaration, error)
	// List returns the declarations that match filter, oldest first
	// (CreatedAt, then ID).
	List(ctx context.Context, filter Filter) ([]*Declaration, error)
}

// Filter selects declarations for Store.List. Zero fields match all.
type Filter struct {
	ContextID string  // only this session's
	States    []State // only declarations in one of these states
	Limit     int     // at most this many (the oldest); <= 0: no limit
}
