package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/kit/textcut"
)

// Content labels in the audit commit (issue 27). A call that hands the
// agent content records its labels (provenance.go) and its audit record;
// both must be durable before the answer leaves. They were two write
// transactions, two fsyncs, and the label's was outside the group commit:
// every call serialised on it, and its eviction read every live row of
// the context (past the row's text, so SQLite walked each row's overflow
// pages): 4–6 ms of CPU per call at 730 live 5.6 KB labels. Now
// [DB.AppendLabelled] hands the labels to the writer with the record, and
// they are written in the record's own transaction: one commit, one fsync
// per batch, and the record names each label's seq as before.
//
// provenance_live (migration 10) keeps per context the next seq, the bytes
// of live text and the oldest live seq, so eviction reads only the rows it
// evicts. It relies on what eviction always did: the evicted rows of a
// context are a prefix of its seqs (the oldest first), so every row from
// oldest_live on is live.

// liveMigration is migration 10: the per-context totals of provenance_content.
var liveMigration = migration{
	version: 10,
	name:    "provenance: per-context live totals",
	steps: []step{
		table{name: "provenance_live", cols: []column{
			{"context_id", sortedText, primaryKey},
			{"next_seq", bigint, notNull},
			{"live_bytes", bigint, notNull},
			{"oldest_live", bigint, notNull},
		}},
		stmt(`INSERT INTO provenance_live (context_id, next_seq, live_bytes, oldest_live)
			SELECT context_id, MAX(seq) + 1, COALESCE(SUM(CASE WHEN evicted = 0 THEN bytes ELSE 0 END), 0),
				COALESCE(MIN(CASE WHEN evicted = 0 THEN seq END), MAX(seq) + 1)
			FROM provenance_content GROUP BY context_id`),
	},
}

const (
	sqlEnsureLive = `INSERT INTO provenance_live (context_id, next_seq, live_bytes, oldest_live) VALUES ($1, 1, 0, 1)
	ON CONFLICT (context_id) DO NOTHING`
	sqlGetLive    = `SELECT next_seq, live_bytes, oldest_live FROM provenance_live WHERE context_id = $1`
	sqlUpdateLive = `UPDATE provenance_live SET next_seq = $2, live_bytes = $3, oldest_live = $4 WHERE context_id = $1`
	// sqlUpdateLiveFrom is sqlUpdateLive guarded by the values the batch
	// started from (livecache.go).
	sqlUpdateLiveFrom = sqlUpdateLive + ` AND next_seq = $5 AND live_bytes = $6 AND oldest_live = $7`
	// sqlOldestLive reads only columns stored before the text: no
	// overflow page is read for a row that is not evicted.
	sqlOldestLive = `SELECT seq, bytes FROM provenance_content WHERE context_id = $1 AND seq >= $2 ORDER BY seq LIMIT $3`
	sqlEvictRange = `UPDATE provenance_content SET text = $4, evicted = 1 WHERE context_id = $1 AND seq >= $2 AND seq <= $3`
)

// Labels are the content labels of one call, recorded with its audit
// record by [DB.AppendLabelled].
type Labels struct {
	// List is in the order the agent is handed them; each is checked with
	// [CheckLabel] first. AppendLabelled sets each one's Seq.
	List []*ContentLabel
	// MaxBytes caps the live text of the context (see RecordContent).
	MaxBytes int64

	readers []string // List's readers, encoded
	evicted []int    // per label: rows its insert evicted
}

// CheckLabel checks l as [DB.RecordContent] would store it and brings it
// into the stored form: its text cut to maxBytes on a rune boundary, its
// SHA256, Bytes and CreatedAt set. A label it refuses wraps
// [ErrProvenanceInvalid]; the caller decides what the call answers before
// any record is queued.
func CheckLabel(l *ContentLabel, maxBytes int64) error {
	_, err := checkLabel(l, maxBytes)
	return err
}

func checkLabel(l *ContentLabel, maxBytes int64) (readers string, err error) {
	if l.Integrity != IntegrityTrusted && l.Integrity != IntegrityUntrusted {
		return "", fmt.Errorf("store: content label: integrity %q: %w", l.Integrity, ErrProvenanceInvalid)
	}
	if maxBytes <= 0 {
		return "", fmt.Errorf("store: content label: cap %d: %w", maxBytes, ErrProvenanceInvalid)
	}
	if err := provText("content label", textField{"context", l.ContextID}, textField{"source", l.Source},
		textField{"kind", l.Kind}); err != nil {
		return "", err
	}
	if readers, err = encodeReaders(l.Readers); err != nil {
		return "", err
	}
	l.Text, _ = textcut.Prefix(l.Text, int(min(maxBytes, int64(len(l.Text)))))
	l.SHA256, l.Bytes, l.CreatedAt = hexSHA(l.Text), int64(len(l.Text)), storedTime(l.CreatedAt)
	return readers, nil
}

// AppendLabelled is [DB.Append] for a call that hands the agent content:
// labels are recorded in the same transaction as rec, and rec's extra
// names each of them (seq, source, integrity, sha256, bytes, rows evicted,
// readers; [audit.WithLabels]) before it is hashed. Both are durable when
// it returns nil; on an error neither is in the store. Labels that
// [CheckLabel] refuses are refused here before anything is queued.
func (db *DB) AppendLabelled(ctx context.Context, rec *audit.Record, labels *Labels) error {
	return db.AppendCall(ctx, rec, labels, nil)
}

// checkLabels checks labels as [CheckLabel] does and keeps each one's
// encoded readers for the writer; nil and empty are none (nil).
func checkLabels(labels *Labels) (*Labels, error) {
	if labels == nil || len(labels.List) == 0 {
		return nil, nil
	}
	labels.readers = make([]string, len(labels.List))
	for i, l := range labels.List {
		r, err := checkLabel(l, labels.MaxBytes)
		if err != nil {
			return nil, err
		}
		labels.readers[i] = r
	}
	return labels, nil
}

// liveState is one context's provenance_live row while a transaction
// labels it, and the oldest live rows read so far (to evict).
type liveState struct {
	next, bytes, oldest int64
	before              int64 // oldest as read: rows from here on were live
	first               int64 // the first seq this transaction assigns
	olds                []seqBytes
	fetch               int // rows the last read of olds asked for
	// guarded: the values are the writer's memory, not the row as read;
	// the row is written back only if it still holds them (livecache.go).
	guarded     bool
	bytesBefore int64
}

type seqBytes struct{ seq, bytes int64 }

// pendingLabel is a label given its seq in this transaction, to insert.
type pendingLabel struct {
	l       *ContentLabel
	readers string
	evicted bool
}

// labelInTx records every label of batch in tx and merges each record's
// labels into its extra (recs[i] is batch[i]'s; nil: no records). With
// lives (the writer's memory, livecache.go) a context it remembers is not
// read, and every context's row as written is left in it. Contexts are locked in sorted order (on
// PostgreSQL each one's provenance_live row FOR UPDATE), so two
// transactions cannot deadlock on them. Eviction is decided label by
// label in the order the batch holds them, as separate RecordContent
// calls would decide it; a label evicted within the same batch is
// inserted evicted.
//
// then, when not nil, is called once the contexts' reads are queued and
// before they are awaited, so that a read it queues goes out with them,
// after them: the chain head's (writeRecords), in the lock order of every
// append — contexts' rows, then the head.
func (db *DB) labelInTx(ctx context.Context, t wtx, recs []*audit.Record, batch []*Labels, lives map[string]liveSnap, then func()) error {
	var ids []string
	for _, ls := range batch {
		if ls != nil {
			for _, l := range ls.List {
				ids = append(ids, l.ContextID)
			}
		}
	}
	if len(ids) == 0 {
		if then != nil {
			then()
		}
		return nil
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	states := make(map[string]*liveState, len(ids))
	reads := make(map[string]func() error, len(ids))
	for _, id := range ids {
		if snap, ok := lives[id]; ok {
			states[id] = snap.state()
			continue
		}
		// The row is made sure of first, in the same round trip: a
		// context's first label must lock its row before then's read (the
		// head) locks anything, not create it after (a deadlock with a
		// transaction that created it meanwhile and waits for the head).
		if err := t.later(ctx, laterStmt{what: "creating the live totals of context " + id, query: sqlEnsureLive,
			args: []any{id}, want: -1}); err != nil {
			return err
		}
		st := &liveState{}
		states[id], reads[id] = st, t.prefetch(ctx, db.d.getLiveForUpdate, []any{id}, &st.next, &st.bytes, &st.oldest)
	}
	if then != nil {
		then()
	}
	for _, id := range ids {
		if wait := reads[id]; wait != nil {
			if err := db.readLive(ctx, t, id, states[id], wait()); err != nil {
				return err
			}
		}
	}
	pending := map[string][]*pendingLabel{}
	for _, ls := range batch {
		if ls == nil {
			continue
		}
		ls.evicted = make([]int, len(ls.List))
		for i, l := range ls.List {
			st := states[l.ContextID]
			l.Seq, st.next = st.next, st.next+1
			st.bytes += l.Bytes
			pending[l.ContextID] = append(pending[l.ContextID], &pendingLabel{l: l, readers: ls.readers[i]})
			for st.bytes > ls.MaxBytes {
				if err := db.evictOne(ctx, t, l.ContextID, st, pending[l.ContextID]); err != nil {
					return err
				}
				ls.evicted[i]++
			}
		}
	}
	for _, id := range ids {
		if err := db.writeLive(ctx, t, id, states[id], pending[id]); err != nil {
			return err
		}
		if lives != nil {
			lives[id] = states[id].snap()
		}
	}
	for i, ls := range batch {
		if ls == nil || recs == nil {
			continue
		}
		out := make([]audit.Label, len(ls.List))
		for j, l := range ls.List {
			out[j] = audit.Label{Seq: l.Seq, Source: l.Source, Integrity: l.Integrity, SHA256: l.SHA256,
				Bytes: l.Bytes, Evicted: ls.evicted[j], Readers: l.Readers}
		}
		recs[i].Extra = audit.WithLabels(recs[i].Extra, out)
	}
	return nil
}

// readLive finishes the read of a context's provenance_live row (on
// PostgreSQL FOR UPDATE) into st, err being the prefetched read's result.
// The row was made sure of before the read; one still missing (deleted
// behind the store's back in between) is created and read.
func (db *DB) readLive(ctx context.Context, t wtx, id string, st *liveState, err error) error {
	db.liveReads.Add(1)
	if errors.Is(err, sql.ErrNoRows) {
		if _, err = t.exec(ctx, sqlEnsureLive, id); err == nil {
			err = t.row(ctx, db.d.getLiveForUpdate, id).Scan(&st.next, &st.bytes, &st.oldest)
		}
	}
	if err != nil {
		return fmt.Errorf("reading the live totals of context %s: %w", id, err)
	}
	st.before, st.first = st.oldest, st.next
	return nil
}

// evictOne drops the oldest live row of a context from st: one stored
// before this transaction (read a few at a time), else one of its pending
// labels.
func (db *DB) evictOne(ctx context.Context, t wtx, id string, st *liveState, pending []*pendingLabel) error {
	if st.oldest >= st.first {
		p := pending[st.oldest-st.first]
		st.bytes -= p.l.Bytes
		p.evicted = true
		st.oldest++
		return nil
	}
	if len(st.olds) == 0 {
		// 2 rows, then 8, then 64 at a time: a label usually evicts one
		// or two, a large one many.
		st.fetch = min(max(2, st.fetch*4), 64)
		err := t.each(ctx, sqlOldestLive, []any{id, st.oldest, st.fetch}, func(row scanner) error {
			var r seqBytes
			if err := row.Scan(&r.seq, &r.bytes); err != nil {
				return err
			}
			st.olds = append(st.olds, r)
			return nil
		})
		if err != nil {
			return fmt.Errorf("reading the oldest content of context %s: %w", id, err)
		}
		if h := db.walkedHook.Load(); h != nil { // tests only
			(*h)(len(st.olds))
		}
		if len(st.olds) == 0 || st.olds[0].seq != st.oldest {
			// Only a row deleted or edited behind the store's back.
			return fmt.Errorf("context %s: live content from seq %d is missing", id, st.oldest)
		}
	}
	st.bytes -= st.olds[0].bytes
	st.oldest, st.olds = st.olds[0].seq+1, st.olds[1:]
	return nil
}

// writeLive inserts a context's pending labels, evicts the stored rows
// eviction reached and writes its totals back.
func (db *DB) writeLive(ctx context.Context, t wtx, id string, st *liveState, pending []*pendingLabel) error {
	args := make([]any, 0, len(pending)*labelArgs)
	for _, p := range pending {
		l, text, evicted := p.l, []byte(p.l.Text), 0
		if p.evicted {
			text, evicted = []byte{}, 1
		}
		args = append(args, l.ContextID, l.Seq, l.Source, l.Kind, l.Integrity, p.readers,
			l.SHA256, l.Bytes, text, evicted, formatTime(l.CreatedAt))
	}
	if err := insertChunked(ctx, t, insertLabels, args, "content labels of context "+id); err != nil {
		return err
	}
	if last := min(st.oldest, st.first) - 1; last >= st.before {
		if err := t.later(ctx, laterStmt{what: "evicting content of context " + id, query: sqlEvictRange,
			args: []any{id, st.before, last, []byte{}}, want: -1}); err != nil {
			return err
		}
	}
	update := laterStmt{what: "updating the live totals of context " + id, query: sqlUpdateLive,
		args: []any{id, st.next, st.bytes, st.oldest}, want: -1}
	if st.guarded {
		update.query, update.want, update.moved = sqlUpdateLiveFrom, 1, errLiveMoved
		update.args = append(update.args, st.first, st.bytesBefore, st.before)
	}
	return t.later(ctx, update)
}
