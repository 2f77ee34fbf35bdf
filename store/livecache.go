package store

import (
	"errors"
	"sync"
)

// The provenance_live rows the writer last committed, kept in memory
// (issue 27), as the chain head is (headCache): on SQLite a batch that
// labels content need not read its contexts' rows, nor the oldest live
// rows it will evict, which a batch before it already read.
//
// What keeps it exact: a remembered row is used only under a guard. The
// batch writes each context's totals back with
// UPDATE … WHERE next_seq, live_bytes and oldest_live are the values it
// started from; a row that anyone else — another process on the file,
// another handle, [DB.RecordContent] — moved since fails the update, the
// transaction rolls back, and the writer retries the batch from the rows
// as stored (writeRecords). Every writer of a row moves next_seq (an
// insert), oldest_live (an eviction) or live_bytes, so a moved row cannot
// pass. The remembered oldest rows (seq and bytes) are rows from
// oldest_live on, which nothing rewrites while they are live: an eviction
// moves oldest_live past them and fails the guard first.
// TestAppendLabelledAcrossHandles interleaves two handles and RecordContent.
//
// On PostgreSQL nothing is remembered: every batch reads the rows FOR
// UPDATE, which is also its lock order across instances.

// liveSnap is a context's provenance_live row as the writer left it, with
// the oldest live rows it had read ahead.
type liveSnap struct {
	next, bytes, oldest int64
	olds                []seqBytes
	fetch               int
}

// maxCachedLive bounds the contexts remembered; past it the memory starts
// over (a context not remembered is read, as before).
const maxCachedLive = 1024

// errLiveMoved: a context's provenance_live row was not what the batch
// started from.
var errLiveMoved = errors.New("the context's live totals moved")

// writerMemo is something the writer remembers between batches. A batch
// takes it (taken, it is the batch's alone) and puts back what its commit
// left, unless someone took it since (gen).
type writerMemo[T any] struct {
	mu  sync.Mutex
	gen uint64
	v   T
}

// take returns what is remembered (T's zero value: nothing) and forgets
// it; gen is for put.
func (m *writerMemo[T]) take() (gen uint64, v T) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gen++
	v, m.v = m.v, *new(T)
	return m.gen, v
}

// put remembers v unless someone took the memory since gen.
func (m *writerMemo[T]) put(gen uint64, v T) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.gen == gen {
		m.v = v
	}
}

// liveCache is the live rows the writer remembers.
type liveCache struct {
	writerMemo[map[string]liveSnap]
}

// take returns the remembered rows (an empty map when none; nil on
// PostgreSQL, where nothing is remembered) and forgets them; gen is for
// put.
func (c *liveCache) take(d *dialect) (uint64, map[string]liveSnap) {
	gen, m := c.writerMemo.take()
	if d.advisory {
		return gen, nil
	}
	if m == nil || len(m) > maxCachedLive {
		m = map[string]liveSnap{}
	}
	return gen, m
}

// state is s as the start of a batch's work on its context.
func (s liveSnap) state() *liveState {
	return &liveState{next: s.next, bytes: s.bytes, oldest: s.oldest, before: s.oldest, first: s.next,
		olds: s.olds, fetch: s.fetch, guarded: true, bytesBefore: s.bytes}
}

// snap is what st leaves for the next batch.
func (st *liveState) snap() liveSnap {
	return liveSnap{next: st.next, bytes: st.bytes, oldest: st.oldest, olds: st.olds, fetch: st.fetch}
}
