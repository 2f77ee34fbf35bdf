package killswitch

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// untilWithin polls cond until it holds and fails if that takes longer
// than d: a measured bound, not a sleep.
func untilWithin(t *testing.T, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > d {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(100 * time.Microsecond)
	}
	return time.Since(start)
}

// TestWatcherSeesWriteByEvent: with polling practically off (an hour's
// interval), a Write is seen through inotify alone, engage and release,
// each within 50 ms.
func TestWatcherSeesWriteByEvent(t *testing.T) {
	dir := t.TempDir()
	w := Watch(dir, &WatchOptions{Interval: time.Hour})
	defer w.Close()
	if v := w.View(); v.Engaged() {
		t.Fatalf("no file: %+v", v)
	}
	on := State{Engaged: true, By: "op", Reason: "drill", At: time.Now().UTC(), ID: NewID()}
	if err := Write(dir, on); err != nil {
		t.Fatal(err)
	}
	d := untilWithin(t, 50*time.Millisecond, "engage", func() bool { return w.View().Engaged() })
	if v := w.View(); v.File.ID != on.ID || v.Err != nil {
		t.Fatalf("engaged view: %+v", v)
	}
	t.Logf("engage seen after %v", d)
	if err := Write(dir, State{By: "op", Reason: "over", At: time.Now().UTC(), ID: NewID()}); err != nil {
		t.Fatal(err)
	}
	untilWithin(t, 50*time.Millisecond, "release", func() bool { return !w.View().Engaged() })
	if err := os.Remove(filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	untilWithin(t, 50*time.Millisecond, "removal", func() bool { return w.View().File.ID == "" })
}

// TestWatcherPollsTheProbe: the store's setting sends no event here; the
// interval picks it up, and a probe error is engaged with the error.
func TestWatcherPollsTheProbe(t *testing.T) {
	type answer struct {
		on  bool
		err error
	}
	var cur atomic.Pointer[answer]
	cur.Store(&answer{})
	probe := func(context.Context) (bool, error) { a := cur.Load(); return a.on, a.err }
	w := Watch(t.TempDir(), &WatchOptions{Probe: probe, Interval: 5 * time.Millisecond})
	defer w.Close()
	if w.View().Engaged() {
		t.Fatal("engaged at start")
	}
	cur.Store(&answer{on: true})
	untilWithin(t, 50*time.Millisecond, "store engage", func() bool { v := w.View(); return v.Store && v.Err == nil })
	cur.Store(&answer{})
	untilWithin(t, 50*time.Millisecond, "store release", func() bool { return !w.View().Engaged() })
	boom := errors.New("database gone")
	cur.Store(&answer{err: boom})
	untilWithin(t, 50*time.Millisecond, "probe error", func() bool { return errors.Is(w.View().Err, boom) })
	if v := w.View(); !v.Engaged() || !v.Store {
		t.Fatalf("a probe error must be engaged: %+v", v)
	}
}

// TestWatcherFailsClosed: a corrupt file is an engaged view with
// ErrCorrupt, seen as any other change.
func TestWatcherFailsClosed(t *testing.T) {
	dir := t.TempDir()
	w := Watch(dir, &WatchOptions{Interval: time.Hour})
	defer w.Close()
	tmp := filepath.Join(dir, "x.tmp")
	if err := os.WriteFile(tmp, []byte(`{"engaged":false`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	untilWithin(t, 50*time.Millisecond, "corrupt file", func() bool { return errors.Is(w.View().Err, ErrCorrupt) })
	if !w.View().Engaged() {
		t.Fatal("a corrupt file must be engaged")
	}
}

// TestWatcherStalledReadsItself: a watcher that no longer refreshes (here:
// closed) is not trusted past its stale bound; View reads for itself and
// sees a change at once.
func TestWatcherStalledReadsItself(t *testing.T) {
	dir := t.TempDir()
	w := Watch(dir, &WatchOptions{Interval: time.Millisecond})
	w.Close()
	time.Sleep(w.stale + 10*time.Millisecond)
	if err := Write(dir, State{Engaged: true, By: "op", Reason: "drill", At: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	if v := w.View(); !v.Engaged() || v.Err != nil {
		t.Fatalf("stalled watcher: %+v", v)
	}
	if w.CallerReads() == 0 {
		t.Fatal("View did not read for itself")
	}
}

// TestConcernsFile: the event filter wakes on the switch file, on the
// directory itself and on overflow, not on the store's or witness's files.
func TestConcernsFile(t *testing.T) {
	ev := func(mask uint32, name string) []byte {
		n := (len(name) + 1 + 15) / 16 * 16
		if name == "" {
			n = 0
		}
		b := make([]byte, unix.SizeofInotifyEvent+n)
		binary.NativeEndian.PutUint32(b[4:], mask)
		binary.NativeEndian.PutUint32(b[12:], uint32(n))
		copy(b[unix.SizeofInotifyEvent:], name)
		return b
	}
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	tests := []struct {
		name string
		b    []byte
		want bool
	}{
		{"rename onto the file", ev(unix.IN_MOVED_TO, FileName), true},
		{"the store's journal", ev(unix.IN_CREATE, "airlock.db-journal"), false},
		{"a temporary file", ev(unix.IN_CREATE, "."+FileName+".abc.tmp"), false},
		{"a prefix of the name", ev(unix.IN_CREATE, "kill_switch.js"), false},
		{"second event of a batch", cat(ev(unix.IN_CREATE, "witness.log"), ev(unix.IN_DELETE, FileName)), true},
		{"directory moved", ev(unix.IN_MOVE_SELF, ""), true},
		{"queue overflow", ev(unix.IN_Q_OVERFLOW, ""), true},
		{"torn batch", ev(unix.IN_CREATE, "witness.log")[:unix.SizeofInotifyEvent+3], true},
		{"empty", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := concernsFile(tt.b); got != tt.want {
				t.Errorf("concernsFile = %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzConcernsFile: any bytes in an event batch are decided without a
// panic or an out-of-range read (the kernel's format is trusted, but a
// filter that crashed would stop the watcher).
func FuzzConcernsFile(f *testing.F) {
	f.Add([]byte{})
	b := make([]byte, unix.SizeofInotifyEvent+32)
	binary.NativeEndian.PutUint32(b[4:], unix.IN_MOVED_TO)
	binary.NativeEndian.PutUint32(b[12:], 32)
	copy(b[unix.SizeofInotifyEvent:], FileName)
	f.Add(b)
	f.Add(b[:20])
	f.Fuzz(func(t *testing.T, b []byte) { concernsFile(b) })
}

// TestWatcherWakesOnNotice: with polling practically off, a notice from
// the store makes the watcher re-read the probe at once.
func TestWatcherWakesOnNotice(t *testing.T) {
	var on atomic.Bool
	notices := make(chan struct{}, 1)
	w := Watch(t.TempDir(), &WatchOptions{Probe: func(context.Context) (bool, error) { return on.Load(), nil },
		Notices: notices, Interval: time.Hour})
	defer w.Close()
	on.Store(true)
	notices <- struct{}{}
	untilWithin(t, 50*time.Millisecond, "notice", func() bool { return w.View().Store })
}
