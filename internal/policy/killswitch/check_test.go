package killswitch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCheckSeesEveryChangeBeforeIt (issue 26 item 7): whatever changed
// the switch — a Write engaging or releasing it, the file removed or
// corrupted, the store's setting flipped or unreadable — the very next
// Check reports it. No sleep and no deadline: the verdict is the next
// read's, so it cannot depend on how the machine is loaded.
func TestCheckSeesEveryChangeBeforeIt(t *testing.T) {
	dir := t.TempDir()
	sw := Open(dir)
	var store atomic.Bool
	var storeErr atomic.Pointer[error]
	probe := func(context.Context) (bool, error) {
		if p := storeErr.Load(); p != nil {
			return true, *p
		}
		return store.Load(), nil
	}
	write := func(engaged bool) func() {
		return func() {
			if err := Write(dir, State{Engaged: engaged, By: "op", At: time.Now().UTC(), ID: NewID()}); err != nil {
				t.Fatal(err)
			}
		}
	}
	unreadable := errors.New("store unreachable")
	steps := []struct {
		what    string
		change  func()
		engaged bool
		err     bool
	}{
		{"no file, store released", func() {}, false, false},
		{"engaged by the file", write(true), true, false},
		{"released by the file", write(false), false, false},
		{"engaged by the store", func() { store.Store(true) }, true, false},
		{"released by the store", func() { store.Store(false) }, false, false},
		{"engaged again", write(true), true, false},
		{"file removed", func() { os.Remove(filepath.Join(dir, FileName)) }, false, false},
		{"file corrupt", func() { os.WriteFile(filepath.Join(dir, FileName), []byte("{"), 0o600) }, true, true},
		{"file fixed", write(false), false, false},
		{"store unreadable", func() { storeErr.Store(&unreadable) }, true, true},
		{"store readable", func() { storeErr.Store(nil) }, false, false},
	}
	for _, s := range steps {
		s.change()
		v := sw.Check(context.Background(), probe)
		if v.Engaged() != s.engaged || (v.Err != nil) != s.err {
			t.Fatalf("%s: the next check says engaged=%v err=%v; want engaged=%v err=%v", s.what, v.Engaged(), v.Err, s.engaged, s.err)
		}
	}
}

// TestCheckAfterTripUnderLoad: with every core busy, many goroutines
// checking back to back and the switch tripped among them, no check that
// began after the trip's Write returned reports released. The property
// is checked per call, not timed.
func TestCheckAfterTripUnderLoad(t *testing.T) {
	dir := t.TempDir()
	sw := Open(dir)
	var stop atomic.Bool
	var busy sync.WaitGroup
	for range runtime.GOMAXPROCS(0) * 2 {
		busy.Go(func() {
			for !stop.Load() { // spins on purpose: every core busy
			}
		})
	}
	defer func() { stop.Store(true); busy.Wait() }()
	var tripped atomic.Bool
	var checks, late atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			// Checking on until 200 checks began after the trip.
			for after := 0; after < 200; {
				began := tripped.Load() // read before the check starts
				v := sw.Check(context.Background(), nil)
				if began {
					after++
					checks.Add(1)
					if !v.Engaged() {
						late.Add(1)
					}
				}
			}
		})
	}
	if err := Write(dir, State{Engaged: true, By: "op", At: time.Now().UTC(), ID: NewID()}); err != nil {
		t.Fatal(err)
	}
	tripped.Store(true)
	wg.Wait()
	if n := late.Load(); n != 0 {
		t.Fatalf("%d of the %d checks that began after the trip returned said released", n, checks.Load())
	}
}
