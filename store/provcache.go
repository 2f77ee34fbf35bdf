package store

import (
	"context"
	"database/sql"
	"slices"
	"sync"
)

// provCache keeps, per context, the provenance a handle last read, so that
// the next read (every traced need reads its context's, issue 23) fetches
// only the rows added since instead of the context's whole history.
//
// Invariant: what ContextProvenance returns is exactly what a full read of
// the same snapshot returns — every process serving the context sees every
// other's labels (TestProvenanceCacheContract, on SQLite and PostgreSQL,
// with the writes made through a second handle: the other process). A
// value the agent saw elsewhere that the cache missed would pass as the
// agent's own, so the cache is only ever a starting point checked against
// the snapshot, never the answer on its own. What makes the check cheap
// and sufficient is how the tables change (provenance.go):
//
//   - trusted inputs and endorsements are insert-only, so their row
//     counts name their state; a changed count re-reads them whole
//     (bounded by MaxTrustedInputs and MaxEndorsements);
//   - content rows get seq = MAX(seq)+1 under the context's lock, so the
//     rows not yet cached are exactly those above the cached MAX(seq);
//     an eviction only ever sets evicted = 1 (never back), so the cached
//     live rows are re-checked for it whenever MAX(seq) moved (an
//     eviction commits with the insert that caused it);
//   - the cached newest row is checked to be still the row at its seq (a
//     label lost in a PostgreSQL crash gives its seq to the next, see
//     sameNewest);
//   - a content row count that disagrees with the result (rows deleted,
//     which no writer does today) falls back to the full read.
type provCache struct {
	mu   sync.Mutex
	m    map[string]*provEntry
	tick uint64
}

// maxProvCached bounds how many contexts one handle caches (each holds at
// most the context's capped content text); the least recently used one
// goes first.
const maxProvCached = 64

// provEntry is one context's provenance at one state; never modified
// once cached (readers get copies).
type provEntry struct {
	inputs, endorsements, contents, maxSeq int64
	p                                      *Provenance
	used                                   uint64
}

const (
	sqlProvSignal = `SELECT
	(SELECT COUNT(*) FROM provenance_inputs WHERE context_id = $1),
	(SELECT COUNT(*) FROM endorsements WHERE context_id = $1),
	(SELECT COUNT(*) FROM provenance_content WHERE context_id = $1),
	(SELECT COALESCE(MAX(seq), 0) FROM provenance_content WHERE context_id = $1)`
	sqlContentAfter = `SELECT seq, source, kind, integrity, readers, sha256, bytes, text, evicted, created_at FROM provenance_content
	WHERE context_id = $1 AND seq > $2 ORDER BY seq`
	sqlContentAt = `SELECT seq, source, kind, integrity, readers, sha256, bytes, text, evicted, created_at FROM provenance_content
	WHERE context_id = $1 AND seq = $2`
	sqlEvictedBetween = `SELECT seq FROM provenance_content WHERE context_id = $1 AND seq >= $2 AND seq <= $3 AND evicted = 1`
)

// emptyProv is the state nothing was read in: every count unknown.
func emptyProv() *provEntry {
	return &provEntry{inputs: -1, endorsements: -1, contents: -1, p: &Provenance{}}
}

func (c *provCache) get(id string) *provEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[id]
	if e != nil {
		c.tick++
		e.used = c.tick
	}
	return e
}

// put caches e unless a newer state of the context is cached already.
func (c *provCache) put(id string, e *provEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[id]; old != nil && old.maxSeq > e.maxSeq {
		return
	}
	if c.m == nil {
		c.m = map[string]*provEntry{}
	}
	if _, ok := c.m[id]; !ok && len(c.m) >= maxProvCached {
		lru := ""
		for k, v := range c.m {
			if lru == "" || v.used < c.m[lru].used {
				lru = k
			}
		}
		delete(c.m, lru)
	}
	c.tick++
	e.used = c.tick
	c.m[id] = e
}

// readProvenance reads a context's provenance in tx, starting from what
// the cache holds; it returns a copy the caller may change.
func (db *DB) readProvenance(ctx context.Context, tx *sql.Tx, contextID string) (*Provenance, error) {
	var now provEntry
	signal, err := db.txStmt(ctx, tx, sqlProvSignal)
	if err != nil {
		return nil, err
	}
	if err := signal.QueryRowContext(ctx, contextID).Scan(&now.inputs, &now.endorsements, &now.contents, &now.maxSeq); err != nil {
		return nil, err
	}
	old := db.prov.get(contextID)
	if old == nil || old.maxSeq > now.maxSeq {
		// Nothing cached, or the cache is of a later snapshot than tx.
		old = emptyProv()
	} else if same, err := db.sameNewest(ctx, tx, contextID, old); err != nil {
		return nil, err
	} else if !same {
		old = emptyProv()
	}
	p := &Provenance{Inputs: old.p.Inputs, Endorsements: old.p.Endorsements}
	if old.inputs != now.inputs {
		if p.Inputs, err = readInputs(ctx, tx, contextID); err != nil {
			return nil, err
		}
	}
	if old.endorsements != now.endorsements {
		if p.Endorsements, err = readEndorsements(ctx, tx, contextID); err != nil {
			return nil, err
		}
	}
	if p.Content, err = db.readContentSince(ctx, tx, contextID, old, now.maxSeq); err != nil {
		return nil, err
	}
	if int64(len(p.Content)) != now.contents {
		if p.Content, err = db.readContentSince(ctx, tx, contextID, emptyProv(), now.maxSeq); err != nil {
			return nil, err
		}
	}
	for _, l := range p.Content {
		if l.Evicted && l.Integrity != IntegrityTrusted {
			p.EvictedUntrusted = true
		}
	}
	now.p = p
	db.prov.put(contextID, &now)
	return p.clone(), nil
}

// sameNewest reports whether the newest row old holds is still the row at
// its seq. A label commits with its call's record (labels.go), so a label
// is lost only with its whole transaction — a storage fault, or PostgreSQL
// run with synchronous_commit off — and the next label then takes the lost
// one's seq: MAX(seq) alone could name
// a different row than the cached one and hide the new row's text. Rows
// are lost newest first (the log is replayed in order), so the cached
// newest row surviving unchanged means every cached row did.
func (db *DB) sameNewest(ctx context.Context, tx *sql.Tx, contextID string, old *provEntry) (bool, error) {
	if len(old.p.Content) == 0 {
		return true, nil
	}
	st, err := db.txStmt(ctx, tx, sqlContentAt)
	if err != nil {
		return false, err
	}
	c := old.p.Content[len(old.p.Content)-1]
	rows, err := st.QueryContext(ctx, contextID, c.Seq)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	if !rows.Next() {
		return false, rows.Err()
	}
	r, err := scanContent(rows, contextID)
	if err != nil {
		return false, err
	}
	return r.Source == c.Source && r.Kind == c.Kind && r.Integrity == c.Integrity && r.SHA256 == c.SHA256 &&
		r.Bytes == c.Bytes && r.CreatedAt.Equal(c.CreatedAt) && (r.Readers == nil) == (c.Readers == nil) &&
		slices.Equal(r.Readers, c.Readers), nil
}

// readContentSince is the context's content at maxSeq: old's rows with
// the evictions since applied, then the rows after old's.
func (db *DB) readContentSince(ctx context.Context, tx *sql.Tx, contextID string, old *provEntry, maxSeq int64) ([]*ContentLabel, error) {
	out := old.p.Content
	if old.maxSeq == maxSeq {
		return out, nil
	}
	live := slices.IndexFunc(out, func(l *ContentLabel) bool { return !l.Evicted })
	if live >= 0 {
		st, err := db.txStmt(ctx, tx, sqlEvictedBetween)
		if err != nil {
			return nil, err
		}
		rows, err := st.QueryContext(ctx, contextID, out[live].Seq, old.maxSeq)
		if err != nil {
			return nil, err
		}
		evicted := map[int64]bool{}
		for rows.Next() {
			var seq int64
			if err := rows.Scan(&seq); err != nil {
				rows.Close()
				return nil, err
			}
			evicted[seq] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if len(evicted) > 0 {
			out = slices.Clone(out)
			for i, l := range out[live:] {
				if evicted[l.Seq] {
					cp := *l
					cp.Text, cp.Evicted = "", true
					out[live+i] = &cp
				}
			}
		}
	}
	out = slices.Clip(out)
	st, err := db.txStmt(ctx, tx, sqlContentAfter)
	if err != nil {
		return nil, err
	}
	rows, err := st.QueryContext(ctx, contextID, old.maxSeq)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		l, err := scanContent(rows, contextID)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// txStmt is query, prepared once on the read pool (stmtcache.go), in tx:
// the three queries of a need's provenance read run on every traced need.
// The statement is tx's and closes with it.
func (db *DB) txStmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	st, err := db.reads.get(ctx, db.r, query)
	if err != nil {
		return nil, err
	}
	return tx.StmtContext(ctx, st), nil
}

// clone copies p down to its rows, so a caller changing what it got never
// changes what the cache holds.
func (p *Provenance) clone() *Provenance {
	out := &Provenance{EvictedUntrusted: p.EvictedUntrusted}
	for _, in := range p.Inputs {
		cp := *in
		cp.Readers = slices.Clone(in.Readers)
		out.Inputs = append(out.Inputs, &cp)
	}
	for _, l := range p.Content {
		cp := *l
		cp.Readers = slices.Clone(l.Readers)
		out.Content = append(out.Content, &cp)
	}
	for _, e := range p.Endorsements {
		cp := *e
		out.Endorsements = append(out.Endorsements, &cp)
	}
	return out
}
