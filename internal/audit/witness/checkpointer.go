package witness

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Default checkpoint cadence: a record cut off the end goes unnoticed only
// if it is among the last DefaultEveryRecords records or DefaultInterval.
const (
	DefaultEveryRecords = 64
	DefaultInterval     = 5 * time.Second
)

// CheckpointerOptions set how often a [Checkpointer] writes. Zero values
// mean the defaults.
type CheckpointerOptions struct {
	EveryRecords int64
	Interval     time.Duration
	Logger       *slog.Logger
}

// Checkpointer writes checkpoints in the background: when the chain has
// grown by EveryRecords since the last one (it learns of growth through
// [Checkpointer.Notify]), when Interval has passed and the head or the kill
// switch changed, and once more at [Checkpointer.Close].
type Checkpointer struct {
	log   *Log
	chain Chain
	kill  func() bool
	opts  CheckpointerOptions

	notified atomic.Int64 // highest seq announced by Notify
	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	once     sync.Once

	mu       sync.Mutex // serialises writes; guards last*
	lastSeq  int64
	lastKill bool
	written  bool
}

// StartCheckpointer starts the background writer. kill reports the current
// kill-switch state for each checkpoint.
func StartCheckpointer(l *Log, chain Chain, kill func() bool, opts *CheckpointerOptions) *Checkpointer {
	var o CheckpointerOptions
	if opts != nil {
		o = *opts
	}
	if o.EveryRecords <= 0 {
		o.EveryRecords = DefaultEveryRecords
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Checkpointer{log: l, chain: chain, kill: kill, opts: o,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go c.loop()
	return c
}

// Notify tells the checkpointer the chain now ends at seq. It never blocks:
// the store's writer calls it after each commit.
func (c *Checkpointer) Notify(seq int64) {
	for {
		cur := c.notified.Load()
		if seq <= cur || c.notified.CompareAndSwap(cur, seq) {
			break
		}
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *Checkpointer) loop() {
	defer close(c.done)
	t := time.NewTicker(c.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.wake:
			c.mu.Lock()
			due := c.notified.Load()-c.lastSeq >= c.opts.EveryRecords
			c.mu.Unlock()
			if due {
				c.Now(context.Background())
			}
		case <-t.C:
			c.maybe()
		}
	}
}

// maybe writes a checkpoint if the head or the kill switch moved since the
// last one (another process's appends included).
func (c *Checkpointer) maybe() {
	ctx := context.Background()
	seq, _, err := c.chain.Head(ctx)
	if err != nil {
		c.opts.Logger.Warn("witness: reading chain head", "err", err)
		return
	}
	c.mu.Lock()
	same := c.written && seq == c.lastSeq && c.kill() == c.lastKill
	c.mu.Unlock()
	if !same {
		c.Now(ctx)
	}
}

// Now writes a checkpoint at once, e.g. after the kill switch moved.
func (c *Checkpointer) Now(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	kill := c.kill()
	cp, err := c.log.Checkpoint(ctx, c.chain, kill)
	if err != nil {
		c.opts.Logger.Error("witness: checkpoint failed", "err", err)
		return err
	}
	c.lastSeq, c.lastKill, c.written = cp.Seq, kill, true
	return nil
}

// Close stops the background writer and writes a final checkpoint (clean
// shutdown), returning its error. It does not close the Log.
func (c *Checkpointer) Close() error {
	var err error
	c.once.Do(func() {
		close(c.stop)
		<-c.done
		err = c.Now(context.Background())
	})
	return err
}
