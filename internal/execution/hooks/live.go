package hooks

import (
	"reflect"
	"sync/atomic"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/notify"
)

// Live is a serving process's notifier, rebuilt when a reload changes the
// notifications section. It is safe for concurrent use.
type Live struct {
	opts Options
	cur  atomic.Pointer[notify.Notifier]
}

// NewLive builds the notifier of cfg (Notifier) and keeps it live.
func NewLive(cfg *config.Config, opts *Options) *Live {
	l := &Live{}
	if opts != nil {
		l.opts = *opts
	}
	l.cur.Store(Notifier(cfg, &l.opts))
	return l
}

// Load is the notifier in force (nil-safe to Send to).
func (l *Live) Load() *notify.Notifier { return l.cur.Load() }

// Reload swaps the notifier when the notifications section changed from
// old to cfg; the previous one delivers what it had queued, then closes.
func (l *Live) Reload(old, cfg *config.Config) {
	if reflect.DeepEqual(old.Notify, cfg.Notify) {
		return
	}
	prev := l.cur.Swap(Notifier(cfg, &l.opts))
	go prev.Close()
}

// Close closes the notifier in force after it delivered its queue; a nil
// Live (a runner that failed to start) closes nothing.
func (l *Live) Close() {
	if l != nil {
		l.cur.Load().Close()
	}
}
