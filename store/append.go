package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// The store is the trail's writer: the runner and the operator write
// through audit.Appender.
var _ audit.Appender = (*DB)(nil)

// appendReq is one Append waiting for the writer. rec is the writer's own
// copy, so a caller is never raced by the writer; done has room for the one
// result, so the writer never blocks on a caller.
type appendReq struct {
	ctx    context.Context
	rec    audit.Record
	labels *Labels                   // nil: none
	move   *declarations.Move        // nil: none (callmove.go)
	create *declarations.Declaration // nil: none (callmove.go)
	// refused is why the writer left this request out of the batch's
	// transaction: its move was refused (callmove.go).
	refused error
	done    chan error
}

// Append adds rec to the end of the audit chain. It assigns rec.Seq,
// rec.PrevHash and rec.Hash (and rec.Time when zero) and returns nil only
// after the transaction holding the record has committed and been fsynced.
//
// Concurrent Appends are group-committed: one writer goroutine takes every
// queued record (up to Options.MaxBatch) into a single transaction. If that
// transaction fails, every Append in it returns an error wrapping
// ErrUnavailable and none of their records is in the file; the caller must
// then refuse the action it was auditing.
//
// The chain head is read inside the write transaction (BEGIN IMMEDIATE on
// SQLite, SELECT ... FOR UPDATE of the head row on PostgreSQL), so appends
// from other processes and instances on the same store interleave
// correctly.
//
// A ctx cancelled before the record is taken into a batch makes Append
// return ctx.Err() with nothing written; once taken, the outcome is definite
// and Append waits for it (at most about the busy timeout).
func (db *DB) Append(ctx context.Context, rec *audit.Record) error {
	return db.appendReq(ctx, rec, nil, nil, nil)
}

// appendReq queues rec (and its call's labels, if any) for the writer and
// waits for the commit.
func (db *DB) appendReq(ctx context.Context, rec *audit.Record, labels *Labels, move *declarations.Move, create *declarations.Declaration) error {
	if db.w == nil {
		return fmt.Errorf("store: append: %w", ErrReadOnly)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &appendReq{ctx: ctx, rec: *rec, labels: labels, move: move, create: create, done: make(chan error, 1)}
	req.rec.Instance = db.opts.Instance
	if err := normalize(&req.rec, time.Now()); err != nil {
		return err
	}
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return fmt.Errorf("store: append: %w", ErrClosed)
	}
	select {
	case db.queue <- req:
	case <-ctx.Done():
		db.mu.RUnlock()
		return ctx.Err()
	}
	db.mu.RUnlock()
	if err := <-req.done; err != nil {
		return err
	}
	*rec = req.rec
	return nil
}

// writer is the single goroutine that writes audit records. It blocks for
// one request, gathers whatever else is queued up to MaxBatch, commits them
// in one transaction, and wakes every waiter.
func (db *DB) writer() {
	defer close(db.writerDone)
	batch := make([]*appendReq, 0, db.opts.MaxBatch)
	for first := range db.queue {
		batch = append(batch[:0], first)
	gather:
		for len(batch) < db.opts.MaxBatch {
			select {
			case req, ok := <-db.queue:
				if !ok {
					break gather
				}
				batch = append(batch, req)
			default:
				break gather
			}
		}
		if h := db.gatheredHook.Load(); h != nil { // tests only
			(*h)(len(batch))
		}
		db.commitBatch(batch)
		clear(batch)
	}
}

// commitBatch writes the live requests of batch in one transaction and
// reports the result to each of them.
func (db *DB) commitBatch(batch []*appendReq) {
	live := batch[:0:0]
	for _, req := range batch {
		if err := req.ctx.Err(); err != nil {
			req.done <- err
			continue
		}
		live = append(live, req)
	}
	if len(live) == 0 {
		return
	}
	began := time.Now()
	err := db.writeRecords(live)
	if db.opts.OnBatch != nil {
		db.opts.OnBatch(len(live), time.Since(began), err != nil)
	}
	if err == nil {
		db.ckpt.committed(len(live))
	}
	for _, req := range live {
		if err == nil && req.refused != nil {
			req.done <- req.refused
			continue
		}
		req.done <- err
	}
}

// writeRecords appends the batch's records (and their labels) to the
// chain in one write transaction. On success it has filled each record's
// Seq, PrevHash and Hash; on failure nothing was committed and the error
// wraps ErrUnavailable.
func (db *DB) writeRecords(reqs []*appendReq) error {
	// Not a caller's context: the batch belongs to many callers, and a
	// commit half-abandoned by one of them must not fail the others.
	ctx := context.Background()
	extras := make([][]byte, len(reqs))
	for i, req := range reqs {
		extras[i] = req.rec.Extra
	}
	for attempt := 0; ; attempt++ {
		var (
			seq  int64
			in   *interner
			recs []*audit.Record
		)
		gen, head := db.head.take(db.d)
		lgen, lives := db.lives.take(db.d)
		if attempt > 0 {
			// The rows as stored: the memory was stale or the batch
			// failed for another reason.
			head = nil
			if lives != nil {
				lives = map[string]liveSnap{}
			}
		}
		remembered := head != nil || len(lives) > 0
		err := db.inWriteTx(ctx, "append", txOpts{chain: true}, func(t wtx) (err error) {
			// The calls' declaration moves first: a refused one leaves its
			// request out of the batch (movesInTx).
			if err := db.movesInTx(ctx, t, reqs); err != nil {
				return err
			}
			var labels []*Labels
			for _, req := range reqs {
				if req.refused == nil {
					recs, labels = append(recs, &req.rec), append(labels, req.labels)
				}
			}
			if len(recs) == 0 {
				return errRollback
			}
			// Every append locks in one order — contexts' rows (labelInTx),
			// new strings' rows (chainInTx's interning), the head — so two
			// instances cannot deadlock, whatever version each runs. When
			// no string is new (nearly always), the head's read goes out
			// with the contexts' (wtx.go), and the head is locked for one
			// round trip: from that read to the commit that goes out with
			// the records (two when a label evicts stored content).
			in = db.interner(t)
			var (
				read     chainHead
				readHead func() error
			)
			queueHead := func() {
				if head == nil && in.known(recs) {
					readHead = t.prefetch(ctx, db.d.readHeadForUpdate, nil, &read.seq, &read.hash)
				}
			}
			if err := db.labelInTx(ctx, t, recs, labels, lives, queueHead); err != nil {
				return unavailable("recording content labels", err)
			}
			from := head
			if readHead != nil {
				if err := readHead(); err != nil {
					return unavailable("reading chain head", err)
				}
				from = &read
			}
			seq, err = db.chainInTx(ctx, t, in, recs, from)
			return err
		})
		if err != nil && remembered {
			// The head or the live rows this process remembered may be
			// stale (another process appended or labelled): once more,
			// from the rows as stored.
			for i, req := range reqs {
				req.rec.Extra = extras[i]
			}
			continue
		}
		if err != nil || len(recs) == 0 {
			return err
		}
		db.head.put(gen, seq, recs[len(recs)-1].Hash)
		db.lives.put(lgen, lives)
		in.commit()
		db.committed(seq)
		return nil
	}
}

// chainHead is the last seq and hash of the chain.
type chainHead struct {
	seq  int64
	hash string
}

// headCache is the chain head this process's writer last committed, so
// that a SQLite batch need not read it (it still updates it, guarded).
// Every other appender in the process (the kill switch's record, a
// rotation's) takes it away first, so the writer never puts back a head
// older than theirs (writerMemo's gen).
type headCache struct{ writerMemo[*chainHead] }

// take returns the remembered head (nil: none, or on PostgreSQL, where
// other instances append between any two batches and the row is read
// FOR UPDATE anyway) and forgets it; gen is for put.
func (h *headCache) take(d *dialect) (uint64, *chainHead) {
	gen, head := h.writerMemo.take()
	if d.advisory {
		head = nil
	}
	return gen, head
}

// put remembers the head a commit left, unless someone took the head
// since gen.
func (h *headCache) put(gen uint64, seq int64, hash string) {
	h.writerMemo.put(gen, &chainHead{seq, hash})
}

// chainInTx links recs onto the chain head, inserts them and moves the
// head, returning the new last seq; t must be a write transaction, in
// interns the records' strings in it (commit it after t commits).
//
// The head is from, when the caller has it (the writer's memory, SQLite
// only: this transaction holds the file's write lock from its BEGIN; or
// the writer's read, sent with the contexts' reads), else the row; on
// PostgreSQL the row is read FOR UPDATE, which queues every other
// instance's append until this transaction ends — so it is read only
// after what needs a round trip of its own (interning, declaration
// moves), and what follows is the records' inserts, several rows a
// statement, and the head's update, which go out with the commit
// (wtx.go): the head is locked for one round trip. The update is guarded
// (WHERE last_seq = the head used): a remembered head that another
// process moved on fails the transaction (writeRecords retries once from
// the row), so the chain stays one whatever this process remembers.
func (db *DB) chainInTx(ctx context.Context, t wtx, in *interner, recs []*audit.Record, from *chainHead) (int64, error) {
	if err := in.internAll(ctx, recs); err != nil {
		return 0, unavailable("interning the records' strings", err)
	}
	var head chainHead
	if from != nil {
		head = *from
	} else if err := t.row(ctx, db.d.readHeadForUpdate).Scan(&head.seq, &head.hash); err != nil {
		return 0, unavailable("reading chain head", err)
	}
	seq, prev := head.seq, head.hash
	args := make([]any, 0, len(recs)*recordArgs)
	for _, r := range recs {
		seq++
		r.Seq = seq
		r.PrevHash = prev
		r.Hash = r.ComputeHash()
		prev = r.Hash
		a, err := in.rowArgs(ctx, r)
		if err != nil {
			return 0, unavailable(fmt.Sprintf("record %d", seq), err)
		}
		args = append(args, a...)
	}
	if err := insertChunked(ctx, t, insertRecords, args, fmt.Sprintf("records from %d", head.seq+1)); err != nil {
		return 0, unavailable("appending", err)
	}
	if err := t.later(ctx, laterStmt{what: "updating chain head", query: sqlUpdateHeadFrom, args: []any{seq, prev, head.seq},
		want: 1, moved: errHeadMoved}); err != nil {
		return 0, unavailable("appending", err)
	}
	return seq, nil
}

// errHeadMoved: the chain head was not where this append linked to.
var errHeadMoved = errors.New("the chain head moved")

// insertChunked inserts the rows of args (m.cols values each) with as few
// statements as the chunk sizes allow: 64, 16, 4, then one at a time —
// four statements prepared once, where one per row cost a round trip each
// on PostgreSQL and a statement step each on SQLite. what names the rows
// for an error.
func insertChunked(ctx context.Context, t wtx, m *multiInsert, args []any, what string) error {
	for len(args) > 0 {
		n := len(args) / m.cols
		chunk := 1
		for _, c := range chunkSizes {
			if n >= c {
				chunk = c
				break
			}
		}
		k := chunk * m.cols
		if err := t.later(ctx, laterStmt{what: "inserting " + what, query: m.text[chunk], args: args[:k:k], want: -1}); err != nil {
			return err
		}
		args = args[k:]
	}
	return nil
}

// committed tells Options.OnCommit (the witness checkpointer) that the
// chain now ends at seq.
func (db *DB) committed(seq int64) {
	if db.opts.OnCommit != nil {
		db.opts.OnCommit(seq)
	}
}

func unavailable(what string, err error) error {
	return fmt.Errorf("store: %s: %w: %w", what, ErrUnavailable, err)
}
