package killswitch

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultInterval is how often a [Watcher] re-checks the switch even
// without a change event: the bound on how late it sees a change that
// sends none (the store's setting written by another instance, a file
// system without inotify).
const DefaultInterval = 10 * time.Millisecond

// Probe reads a second source of the switch that a [Watcher] folds in —
// the audit store's kill_switch setting, which every instance on a shared
// PostgreSQL store sees. It is called every interval, so it must be cheap,
// and it must report engaged together with any error.
type Probe func(ctx context.Context) (engaged bool, err error)

// WatchOptions configures [Watch]; nil means the defaults.
type WatchOptions struct {
	Probe Probe
	// Notices wakes the watcher to re-read at once: the store's signal
	// that the probe's answer may have changed (PostgreSQL's NOTIFY).
	// Nil: the probe is polled only.
	Notices  <-chan struct{}
	Interval time.Duration // default DefaultInterval
	Logger   *slog.Logger  // default slog.Default()
}

// View is the kill switch as a [Watcher] last read it.
type View struct {
	// File is the kill switch file's state (engaged if it is unreadable).
	File State
	// Store is the probe's answer (false without a probe).
	Store bool
	// Err says why the state could not be read; a View with an error is
	// engaged.
	Err error

	at time.Time
}

// Engaged reports whether calls must be refused: by the file, by the
// store, or because either could not be read (fail closed).
func (v View) Engaged() bool { return v.Err != nil || v.File.Engaged || v.Store }

// Watcher keeps the kill switch in memory so that the per-call check is
// an atomic load, not a stat(2) and a database probe (issue 11). A
// goroutine re-reads the state when inotify reports a change of the file
// (a rename onto it, as [Write] does, or its removal), when the store
// signals a change of its setting (WatchOptions.Notices), and every
// interval in any case; a change made by another process therefore takes
// effect within about one interval at worst (TestWatcherSeesWriteByEvent,
// TestWatcherPollsTheProbe, and TestKillFromAnotherProcessWithin50ms in
// package server).
//
// It fails closed: a state it cannot read is a View with Err, which is
// engaged, and it logs that. If the goroutine stops refreshing (stuck or
// starved), [Watcher.View] notices the age of the last read and reads the
// state itself on the caller's path, so a stalled watcher costs speed,
// never a stale answer older than the stale bound.
type Watcher struct {
	sw       *Switch
	probe    Probe
	notices  <-chan struct{}
	interval time.Duration
	stale    time.Duration
	log      *slog.Logger

	cur      atomic.Pointer[View]
	mu       sync.Mutex // serialises reads, so an older View never replaces a newer one
	failing  bool       // guarded by mu: the last read had an error (log on change only)
	stalled  atomic.Bool
	inotify  *os.File
	wake     chan struct{}
	stop     chan struct{}
	done     sync.WaitGroup
	closeOne sync.Once

	// callerReads counts reads made on a caller's path (stale fallback),
	// for tests.
	callerReads atomic.Int64
}

// Watch starts watching the kill switch of state directory dir. The state
// is read once before it returns, so the first View is a real one.
func Watch(dir string, opts *WatchOptions) *Watcher {
	var o WatchOptions
	if opts != nil {
		o = *opts
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	w := &Watcher{
		sw: Open(dir), probe: o.Probe, notices: o.Notices, interval: o.Interval, log: o.Logger,
		// Generous against scheduling delays on a loaded machine; past it
		// the caller reads for itself.
		stale: max(25*o.Interval, 250*time.Millisecond),
		wake:  make(chan struct{}, 1), stop: make(chan struct{}),
	}
	w.refresh()
	f, err := watchDir(dir)
	if err != nil {
		w.log.Warn("kill switch: no inotify; polling only", "interval", w.interval, "err", err)
	} else {
		w.inotify = f
		w.done.Add(1)
		go w.readEvents()
	}
	w.done.Add(1)
	go w.loop()
	return w
}

// View returns the state as last read: an atomic load, no system call on
// the normal path.
func (w *Watcher) View() View {
	v := w.cur.Load()
	if time.Since(v.at) <= w.stale {
		return *v
	}
	if !w.stalled.Swap(true) {
		w.log.Error("kill switch watcher stalled; reading the state on each call", "last_read", v.at)
	}
	w.callerReads.Add(1)
	return w.refresh()
}

// CallerReads is how many times View had to read the state itself because
// the watcher had stalled (for tests and metrics).
func (w *Watcher) CallerReads() int64 { return w.callerReads.Load() }

// Refresh reads the state now (after a change this process made itself).
func (w *Watcher) Refresh() View { return w.refresh() }

// Close stops the watcher. View keeps answering, reading for itself.
func (w *Watcher) Close() error {
	w.closeOne.Do(func() {
		close(w.stop)
		if w.inotify != nil {
			w.inotify.Close() // unblocks readEvents
		}
		w.done.Wait()
	})
	return nil
}

func (w *Watcher) loop() {
	defer w.done.Done()
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-w.wake:
		case <-w.notices:
		case <-t.C:
		}
		w.refresh()
	}
}

// refresh reads the file (one stat; a read only when it changed) and the
// probe, publishes the View and logs a change between readable and not.
func (w *Watcher) refresh() View {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, err := w.sw.State()
	v := View{File: st, Err: err}
	if w.probe != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		on, perr := w.probe(ctx)
		cancel()
		v.Store = on || perr != nil
		v.Err = errors.Join(v.Err, perr)
	}
	v.at = time.Now()
	w.cur.Store(&v)
	w.stalled.Store(false)
	switch {
	case v.Err != nil && !w.failing:
		w.log.Error("kill switch state unreadable; refusing all calls", "err", v.Err)
	case v.Err == nil && w.failing:
		w.log.Info("kill switch state readable again")
	}
	w.failing = v.Err != nil
	return v
}

// watchDir returns an inotify descriptor watching dir for the changes
// that can replace or remove the kill switch file. The directory, not the
// file: Write renames a new file over the old one, and the file may not
// exist yet.
func watchDir(dir string) (*os.File, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("inotify_init1: %w", err)
	}
	const mask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_CLOSE_WRITE |
		unix.IN_DELETE | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("inotify_add_watch %s: %w", dir, err)
	}
	// Non-blocking: os.File reads through the runtime poller, and Close
	// unblocks a pending Read.
	return os.NewFile(uintptr(fd), "inotify"), nil
}

// readEvents wakes the loop on every event that concerns the kill switch
// file (or the directory itself, or a lost event queue); events about the
// directory's other files (the store, the witness) are ignored.
func (w *Watcher) readEvents() {
	defer w.done.Done()
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := w.inotify.Read(buf)
		if err != nil {
			select {
			case <-w.stop:
			default:
				w.log.Warn("kill switch: inotify failed; polling only", "interval", w.interval, "err", err)
			}
			return
		}
		if concernsFile(buf[:n]) {
			select {
			case w.wake <- struct{}{}:
			default:
			}
		}
	}
}

// concernsFile reports whether a batch of inotify events names FileName,
// or is about the watched directory itself or an overflow.
func concernsFile(b []byte) bool {
	for len(b) >= unix.SizeofInotifyEvent {
		// struct inotify_event: wd, mask, cookie, len (uint32 each), name.
		mask, n := binary.NativeEndian.Uint32(b[4:]), binary.NativeEndian.Uint32(b[12:])
		if uint64(n) > uint64(len(b)-unix.SizeofInotifyEvent) {
			return true // a torn batch: refresh rather than guess
		}
		end := unix.SizeofInotifyEvent + int(n)
		if mask&(unix.IN_Q_OVERFLOW|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_IGNORED) != 0 {
			return true
		}
		name := b[unix.SizeofInotifyEvent:end]
		if i := indexNUL(name); i >= 0 {
			name = name[:i]
		}
		if string(name) == FileName {
			return true
		}
		b = b[end:]
	}
	return false
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}
