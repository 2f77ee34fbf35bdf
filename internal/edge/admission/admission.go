// Package admission bounds how many governed calls run at once beyond the
// HTTP edge. A call over the bound waits at the edge, shallow — its body
// read and checked, nothing decoded, no session's state loaded, no
// goroutine of the MCP library started — instead of deep in the runner,
// where a call waiting for its audit record's group commit holds a grown
// stack and its response (issue 27: ~830 of 1,000 calling sessions were
// inside the server at once, ~60 KB each, and the GC's goal counts the
// stacks a second time).
//
// The invariant: at most [Gate]'s limit callers hold a [Slot] at once; a
// caller whose context ends while it waits leaves without a slot and
// without taking one from anybody (TestCancelledWaiterTakesNoSlot), and a
// slot released twice is released once (TestReleaseIdempotent).
//
// What is bounded, and when a slot is given back, is the caller's choice
// (package server): only calls that finish quickly share one gate, so a
// slow call cannot make a fast one wait behind it (head-of-line blocking).
// The gate is FIFO only as far as Go's channel waiters are; it is not fair
// between principals.
package admission

import (
	"context"
	"fmt"
	"sync/atomic"
)

// Gate hands out at most limit slots at once. Safe for concurrent use.
type Gate struct {
	slots   chan struct{}
	waiting atomic.Int64
	// observe, when set, is told when a caller starts to wait and when one
	// gives up (tests synchronise on it instead of sleeping).
	observe atomic.Pointer[func(Event)]
}

// Event is what [Gate.Observe]'s function is told.
type Event int

// The events: a caller starts to wait for a slot; a waiting caller's
// context ended, and it left without one.
const (
	Waits Event = iota
	GaveUp
)

// New returns a gate of limit slots; a limit below 1 is 1.
func New(limit int) *Gate {
	return &Gate{slots: make(chan struct{}, max(limit, 1))}
}

// Observe sets a function told of each [Event], from the waiting caller's
// goroutine; it must not block. For tests.
func (g *Gate) Observe(fn func(Event)) { g.observe.Store(&fn) }

func (g *Gate) tell(e Event) {
	if fn := g.observe.Load(); fn != nil {
		(*fn)(e)
	}
}

// Limit is how many slots the gate has.
func (g *Gate) Limit() int { return cap(g.slots) }

// InFlight is how many slots are held now.
func (g *Gate) InFlight() int { return len(g.slots) }

// Waiting is how many callers wait for a slot now.
func (g *Gate) Waiting() int { return int(g.waiting.Load()) }

// Acquire returns a slot, waiting for one while ctx lasts. If ctx ends
// first it returns an error wrapping ctx's, and holds nothing.
func (g *Gate) Acquire(ctx context.Context) (*Slot, error) {
	select {
	case g.slots <- struct{}{}:
		return &Slot{g: g}, nil
	default:
	}
	queued := g.waiting.Add(1)
	g.tell(Waits)
	select {
	case g.slots <- struct{}{}:
		g.waiting.Add(-1)
		return &Slot{g: g, queued: queued}, nil
	case <-ctx.Done():
		g.waiting.Add(-1)
		g.tell(GaveUp)
		return nil, fmt.Errorf("waiting for one of %d call slots: %w", cap(g.slots), context.Cause(ctx))
	}
}

// Slot is one held place at a gate.
type Slot struct {
	g *Gate
	// queued is how many callers were waiting, this one included, when
	// it found the gate full and began to wait; 0 if it found a slot free.
	queued   int64
	released atomic.Bool
}

// Queued is how many callers were waiting for a slot, the slot's own
// caller included, when that caller found the gate full: 0 if it found a
// slot free (or s is nil).
func (s *Slot) Queued() int64 {
	if s == nil {
		return 0
	}
	return s.queued
}

// Release gives the slot back. Idempotent, and a nil slot is a no-op, so
// the code that finished the call's work and the code that ends the
// request may both release it.
func (s *Slot) Release() {
	if s == nil || !s.released.CompareAndSwap(false, true) {
		return
	}
	<-s.g.slots
}

type key struct{}

// With returns ctx carrying s, for code further down the call to release
// it as soon as the call's bounded work is done.
func With(ctx context.Context, s *Slot) context.Context {
	return context.WithValue(ctx, key{}, s)
}

// From returns the slot ctx carries, or nil.
func From(ctx context.Context) *Slot {
	s, _ := ctx.Value(key{}).(*Slot)
	return s
}
