package edge

import (
	"context"
	"sync"
	"time"
)

// Refusal is one request or connection refused at the edge.
type Refusal struct {
	Transport string
	Remote    string // host only
	Principal string // "anonymous" before authentication
	Role      string
	ClientID  string // an OAuth access token's client, when known
	Code      string // a stable violation code
	// Kind splits a code into a few fixed causes that are counted apart
	// ("no token" / "token not recognised"); never peer-chosen text, or a
	// peer could mint keys.
	Kind   string
	Reason string
}

type aggKey struct{ remote, principal, code, kind string }

type aggEntry struct {
	start   time.Time
	pending int
	last    Refusal
}

// Aggregator turns refusals into audit records at a bounded rate: per
// window, at most two records per (remote, principal, code, kind) — the first at
// once, the rest as one record with their count when the window closes —
// and at most MaxKeys distinct keys (beyond that, refusals from addresses
// not yet seen share one overflow key per code). 100,000 refusals from one
// peer are a handful of records, not 100,000 fsyncs.
type Aggregator struct {
	window  time.Duration
	maxKeys int
	record  func(r Refusal, count int)
	now     func() time.Time

	mu      sync.Mutex
	entries map[aggKey]*aggEntry
}

// Overflow is the Remote of refusals counted under the overflow key.
const Overflow = "*"

// NewAggregator returns an aggregator calling record for each record to
// write (count ≥ 1 refusals it stands for).
func NewAggregator(window time.Duration, maxKeys int, record func(r Refusal, count int)) *Aggregator {
	return &Aggregator{window: window, maxKeys: maxKeys, record: record, now: time.Now, entries: map[aggKey]*aggEntry{}}
}

// Refuse counts r; the first of its key in a window is recorded now.
func (a *Aggregator) Refuse(r Refusal) {
	now := a.now()
	k := aggKey{r.Remote, r.Principal, r.Code, r.Kind}
	a.mu.Lock()
	e := a.entries[k]
	if e == nil && a.maxKeys > 0 && len(a.entries) >= a.maxKeys {
		// Beyond the bound every newcomer shares one key per code.
		r.Remote, r.Principal, r.Kind = Overflow, Overflow, ""
		k = aggKey{Overflow, Overflow, r.Code, ""}
		e = a.entries[k]
	}
	var flushOld *aggEntry
	if e != nil && now.Sub(e.start) < a.window {
		e.pending++
		e.last = r
		a.mu.Unlock()
		return
	}
	if e != nil && e.pending > 0 {
		old := *e
		flushOld = &old
	}
	a.entries[k] = &aggEntry{start: now, last: r}
	a.mu.Unlock()
	if flushOld != nil {
		a.record(flushOld.last, flushOld.pending)
	}
	a.record(r, 1)
}

// Flush records every pending count and forgets keys whose window ended.
func (a *Aggregator) Flush() {
	now := a.now()
	type out struct {
		r Refusal
		n int
	}
	var outs []out
	a.mu.Lock()
	for k, e := range a.entries {
		if e.pending > 0 {
			outs = append(outs, out{e.last, e.pending})
			e.pending = 0
		}
		if now.Sub(e.start) >= a.window {
			delete(a.entries, k)
		}
	}
	a.mu.Unlock()
	for _, o := range outs {
		a.record(o.r, o.n)
	}
}

// Run flushes every window until ctx ends, then once more.
func (a *Aggregator) Run(ctx context.Context) {
	t := time.NewTicker(a.window)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			a.Flush()
			return
		case <-t.C:
			a.Flush()
		}
	}
}
