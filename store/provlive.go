package store

import (
	"context"
	"database/sql"
	"sync"
)

// What a context's content labels cost per call. Every result handed to
// the agent is one label (RecordContent), and the context's live text is
// kept under a cap by evicting the oldest rows. Reading every live row to
// sum them made each call's cost grow with the context's history (~1 ms a
// call at 1,500 live rows, issue 27); now a process remembers, per context,
// the live total and the oldest live seq it left behind, and trusts them
// only while the context's newest seq is still the one it wrote — read in
// the same transaction, under the context's lock (SQLite's write lock,
// PostgreSQL's advisory lock), so another process's label, which always
// moves the newest seq, sends it back to the table. Seqs are never reused
// (no row of provenance_content is ever deleted), so a remembered seq
// cannot match a different row. Eviction then reads only the rows it
// evicts and one more.
//
// The label's transaction is deferred (not fsynced on its own): it is
// committed before the call's audit record, and the record's commit makes
// every earlier commit durable with it (the WAL, or PostgreSQL's log, is
// flushed in order), before the answer leaves. A crash before that record
// loses only the label of a call that was never answered
// (TestRecordContentDeferredDurableWithRecord).

// liveContent is one context's live labels as of its newest seq.
type liveContent struct {
	seq    int64 // the newest seq
	oldest int64 // the oldest live seq; 0 when none is live
	bytes  int64 // the live rows' bytes
}

// maxLiveContexts bounds the remembered contexts; past it the map starts
// over (a forgotten context costs one aggregate read on its next label).
const maxLiveContexts = 4096

type liveCache struct {
	mu sync.Mutex
	m  map[string]liveContent
}

func (c *liveCache) get(contextID string) (liveContent, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[contextID]
	return v, ok
}

func (c *liveCache) put(contextID string, v liveContent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxLiveContexts {
		c.m = map[string]liveContent{}
	}
	// Two of this process's labels for one context commit in seq order but
	// may reach here in either: the newer state wins.
	if old, ok := c.m[contextID]; !ok || old.seq < v.seq {
		c.m[contextID] = v
	}
}

func (c *liveCache) forget(contextID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, contextID)
}

// contentStmts are recordContent's statements, prepared once on w. They
// are fetched before the transaction begins: w has one connection, which
// the transaction holds, and preparing on w inside it would wait forever.
type contentStmts struct{ next, total, insert, from, evict *sql.Stmt }

func (db *DB) contentStmts(ctx context.Context) (*contentStmts, error) {
	var s contentStmts
	for _, q := range []struct {
		st    **sql.Stmt
		query string
	}{{&s.next, sqlNextContentSeq}, {&s.total, sqlLiveTotal}, {&s.insert, sqlInsertContent}, {&s.from, sqlLiveFrom}, {&s.evict, sqlEvictUpTo}} {
		st, err := db.writes.get(ctx, db.w, q.query)
		if err != nil {
			return nil, err
		}
		*q.st = st
	}
	return &s, nil
}

// recordContent inserts l (already cut and hashed) in tx and evicts the
// oldest live text until the context's live bytes are at most maxBytes;
// it returns the context's live state after it, for the cache once tx has
// committed, and how many rows it evicted.
func (db *DB) recordContent(ctx context.Context, tx *sql.Tx, st *contentStmts, l *ContentLabel, readers string, maxBytes int64) (liveContent, int, error) {
	if err := tx.StmtContext(ctx, st.next).QueryRowContext(ctx, l.ContextID).Scan(&l.Seq); err != nil {
		return liveContent{}, 0, err
	}
	live, ok := db.live.get(l.ContextID)
	if !ok || live.seq != l.Seq-1 {
		live = liveContent{}
		if err := tx.StmtContext(ctx, st.total).QueryRowContext(ctx, l.ContextID).Scan(&live.bytes, &live.oldest); err != nil {
			return liveContent{}, 0, err
		}
		db.walked(1)
	}
	if _, err := tx.StmtContext(ctx, st.insert).ExecContext(ctx, l.ContextID, l.Seq, l.Source, l.Kind, l.Integrity, readers,
		l.SHA256, l.Bytes, []byte(l.Text), formatTime(l.CreatedAt)); err != nil {
		return liveContent{}, 0, err
	}
	live.seq, live.bytes = l.Seq, live.bytes+l.Bytes
	if live.oldest == 0 {
		live.oldest = l.Seq
	}
	if live.bytes <= maxBytes {
		return live, 0, nil
	}
	oldest := live.oldest
	n, upTo, err := db.evictFrom(ctx, tx.StmtContext(ctx, st.from), l.ContextID, &live, maxBytes)
	if err != nil {
		return liveContent{}, 0, err
	}
	if _, err := tx.StmtContext(ctx, st.evict).ExecContext(ctx, l.ContextID, upTo, []byte{}, oldest); err != nil {
		return liveContent{}, 0, err
	}
	return live, n, nil
}

// evictFrom walks the live rows from the oldest until what is left fits
// in maxBytes, updating live; it returns how many rows go and the seq of
// the last. The newest row never goes: RecordContent cut it to maxBytes.
func (db *DB) evictFrom(ctx context.Context, from *sql.Stmt, contextID string, live *liveContent, maxBytes int64) (n int, upTo int64, err error) {
	rows, err := from.QueryContext(ctx, contextID, live.oldest)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()
	kept := false
	for rows.Next() {
		var seq, bytes int64
		if err := rows.Scan(&seq, &bytes); err != nil {
			return 0, 0, err
		}
		db.walked(1)
		if live.bytes <= maxBytes {
			live.oldest, kept = seq, true
			break
		}
		live.bytes -= bytes
		upTo = seq
		n++
	}
	if err := rows.Err(); err != nil {
		return 0, 0, err
	}
	if !kept { // every live row went (cannot happen with a cut newest row)
		live.oldest, live.bytes = 0, 0
	}
	return n, upTo, rows.Close()
}

// walked counts rows a label's bookkeeping read, for the test that holds
// it to a constant per label (TestRecordContentCostFlat); nil outside it.
func (db *DB) walked(n int) {
	if h := db.walkedHook.Load(); h != nil {
		(*h)(n)
	}
}
