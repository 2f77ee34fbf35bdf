package admission

import (
	"context"
	"errors"
	"testing"
)

// waitingGate is a gate of limit slots whose waiters announce themselves
// on the returned channel.
func waitingGate(limit int) (*Gate, chan Event) {
	g := New(limit)
	events := make(chan Event, 16)
	g.Observe(func(e Event) { events <- e })
	return g, events
}

func TestBoundHolds(t *testing.T) {
	for _, limit := range []int{1, 3} {
		g, waits := waitingGate(limit)
		var held []*Slot
		for range limit {
			s, err := g.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			held = append(held, s)
		}
		if g.InFlight() != limit || g.Limit() != limit {
			t.Fatalf("limit %d: in flight %d, limit %d", limit, g.InFlight(), g.Limit())
		}
		got := make(chan *Slot)
		go func() {
			s, err := g.Acquire(context.Background())
			if err != nil {
				t.Error(err)
			}
			got <- s
		}()
		if e := <-waits; e != Waits { // the caller over the bound waits
			t.Fatalf("event %v, want Waits", e)
		}
		if g.Waiting() != 1 {
			t.Fatalf("limit %d: waiting %d, want 1", limit, g.Waiting())
		}
		held[0].Release()
		s := <-got // a release admits it
		if s.Queued() != 1 || held[0].Queued() != 0 {
			t.Fatalf("limit %d: Queued() %d for the one caller that waited, %d for one that found room", limit, s.Queued(), held[0].Queued())
		}
		if g.InFlight() != limit {
			t.Fatalf("limit %d: in flight %d after the hand-over", limit, g.InFlight())
		}
		s.Release()
		for _, h := range held[1:] {
			h.Release()
		}
		if g.InFlight() != 0 || g.Waiting() != 0 {
			t.Fatalf("limit %d: in flight %d, waiting %d at the end", limit, g.InFlight(), g.Waiting())
		}
	}
}

// TestCancelledWaiterTakesNoSlot: a caller that gives up while waiting
// leaves with an error wrapping its context's, and no slot leaks.
func TestCancelledWaiterTakesNoSlot(t *testing.T) {
	g, waits := waitingGate(1)
	held, err := g.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		s, err := g.Acquire(ctx)
		if s != nil {
			t.Error("a cancelled waiter got a slot")
		}
		done <- err
	}()
	<-waits
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	if e := <-waits; e != GaveUp {
		t.Fatalf("event %v, want GaveUp", e)
	}
	if g.Waiting() != 0 || g.InFlight() != 1 {
		t.Fatalf("after the cancel: waiting %d, in flight %d", g.Waiting(), g.InFlight())
	}
	held.Release()
	s, err := g.Acquire(context.Background()) // the slot is free: no wait
	if err != nil || g.InFlight() != 1 {
		t.Fatalf("after release: %v, in flight %d", err, g.InFlight())
	}
	s.Release()
}

func TestReleaseIdempotent(t *testing.T) {
	g := New(2)
	a, _ := g.Acquire(context.Background())
	b, _ := g.Acquire(context.Background())
	a.Release()
	a.Release() // must not free b's slot
	if g.InFlight() != 1 {
		t.Fatalf("in flight %d after a double release, want 1", g.InFlight())
	}
	b.Release()
	var none *Slot
	none.Release()
	if From(context.Background()) != nil {
		t.Fatal("a bare context carries a slot")
	}
	if From(With(context.Background(), b)) != b {
		t.Fatal("With/From lost the slot")
	}
	if New(0).Limit() != 1 {
		t.Fatal("a limit below 1 is not 1")
	}
}
