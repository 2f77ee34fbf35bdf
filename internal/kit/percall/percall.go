// Package percall carries one call's memo through its context: the store's
// probe of its own state (the kill switch and the change counter of the
// cached session and context rows) is made once for the call and shared
// by every read the call makes, instead of once per read.
//
// The invariant the memo keeps: what it holds was read after the call
// began, so a change committed before the call began is in it (issue 26
// item 7, issue 27). [With] is therefore called where a call begins (the
// HTTP gate, per request) and never on a context that outlives it; the
// store forgets the memo when the call itself writes what it covers.
package percall

import (
	"context"
	"sync"
)

type key struct{}

// Memo is one call's remembered probe; the zero value holds nothing.
type Memo struct {
	mu  sync.Mutex
	set bool
	v   any
}

// With returns ctx carrying a new, empty memo.
func With(ctx context.Context) context.Context {
	return context.WithValue(ctx, key{}, &Memo{})
}

// From returns ctx's memo, or nil.
func From(ctx context.Context) *Memo {
	m, _ := ctx.Value(key{}).(*Memo)
	return m
}

// Load returns what the memo holds, if anything. A nil memo holds nothing.
func (m *Memo) Load() (any, bool) {
	if m == nil {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.v, m.set
}

// Store remembers v.
func (m *Memo) Store(v any) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.v, m.set = v, true
}

// Forget empties the memo: the next read probes again.
func (m *Memo) Forget() {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.v, m.set = nil, false
}
