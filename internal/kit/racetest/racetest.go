// Package racetest starts many callers at once, for the conformance suites'
// concurrency checks (declarationstest, contextstest). Its invariant: the
// callers of one [Go] are all started before any of them runs, so each
// check races as many callers as it names rather than a trickle, and
// [Running] tells a deliberately broken store that more callers are on
// their way, so it can wait for them instead of for a guessed duration.
//
// It is test code: its name ends in "test", and TestTestPackagesNotShipped
// keeps every production package from importing it.
package racetest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

// running counts the calls of Go under way; callers is the n of the
// newest (the suites run one race at a time).
var (
	running atomic.Int32
	callers atomic.Int32
)

// Running reports whether a Go is under way in this process: a mutant store
// in a suite's tests waits for the next racing caller only then
// (TestConformanceCatchesBrokenStores).
func Running() bool { return running.Load() > 0 }

// Callers is how many callers the Go under way races (0 when none is): a
// mutant that must let every caller check before any acts waits for all
// of them, so the race it stages happens every time, not by scheduling.
func Callers() int {
	if !Running() {
		return 0
	}
	return int(callers.Load())
}

// Go runs call(i) for every i in [0, n) at once — released together once
// all are started — and returns when every call has.
func Go(n int, call func(i int)) {
	callers.Store(int32(n))
	running.Add(1)
	defer running.Add(-1)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			call(i)
		})
	}
	close(start)
	wg.Wait()
}

// Won runs call n times at once, as [Go] does, and returns how many calls
// succeeded; a call failing with anything but lost (the error of a caller
// that lost the race) fails the test.
func Won(t testing.TB, n int, lost error, call func(i int) error) (won int) {
	t.Helper()
	errs := make([]error, n)
	Go(n, func(i int) { errs[i] = call(i) })
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, lost):
			t.Errorf("caller %d: %v, want nil or %v", i, err, lost)
		}
	}
	return won
}
