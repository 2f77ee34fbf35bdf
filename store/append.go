package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// The store is the trail's writer: the runner and the operator write
// through audit.Appender.
var _ audit.Appender = (*DB)(nil)

// appendReq is one Append waiting for the writer. rec is the writer's own
// copy, so a caller is never raced by the writer; done has room for the one
// result, so the writer never blocks on a caller.
type appendReq struct {
	ctx  context.Context
	rec  audit.Record
	done chan error
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
	if db.w == nil {
		return fmt.Errorf("store: append: %w", ErrReadOnly)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	req := &appendReq{ctx: ctx, rec: *rec, done: make(chan error, 1)}
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
	// Our own commit changed data_version for the kill-switch probe
	// connection. Re-prime the cache once per batch, before waking the
	// callers, so their next check is a hit instead of a re-read each.
	if err == nil {
		db.ckpt.committed(len(live))
	}
	for _, req := range live {
		req.done <- err
	}
}

// writeRecords appends recs to the chain in one BEGIN IMMEDIATE
// transaction. On success it has filled each record's Seq, PrevHash and Hash;
// on failure nothing was committed and the error wraps ErrUnavailable.
func (db *DB) writeRecords(reqs []*appendReq) error {
	// Not a caller's context: the batch belongs to many callers, and a
	// commit half-abandoned by one of them must not fail the others.
	ctx := context.Background()
	recs := make([]*audit.Record, len(reqs))
	for i, req := range reqs {
		recs[i] = &req.rec
	}
	var (
		seq int64
		in  *interner
	)
	err := db.inTx(ctx, "append", txOpts{chain: true}, func(tx *sql.Tx) (err error) {
		seq, in, err = db.chainInTx(ctx, tx, recs)
		return err
	})
	if err != nil {
		return err
	}
	in.commit()
	db.committed(seq)
	return nil
}

// chainInTx links recs onto the chain head read inside tx, inserts them and
// moves the head, returning the new last seq. tx must be a write (BEGIN
// IMMEDIATE) transaction, so no other writer moves the head in between; on
// PostgreSQL the head row is read FOR UPDATE, which queues every other
// instance's append on it until this transaction ends.
func (db *DB) chainInTx(ctx context.Context, tx *sql.Tx, recs []*audit.Record) (int64, *interner, error) {
	var seq int64
	var prev string
	if err := tx.QueryRowContext(ctx, db.d.readHeadForUpdate).Scan(&seq, &prev); err != nil {
		return 0, nil, unavailable("reading chain head", err)
	}
	ins := tx.StmtContext(ctx, db.insert)
	in := db.interner(tx)
	for _, r := range recs {
		seq++
		r.Seq = seq
		r.PrevHash = prev
		r.Hash = r.ComputeHash()
		prev = r.Hash
		args, err := in.rowArgs(ctx, r)
		if err != nil {
			return 0, nil, unavailable(fmt.Sprintf("record %d", seq), err)
		}
		if _, err := ins.ExecContext(ctx, args...); err != nil {
			return 0, nil, unavailable(fmt.Sprintf("inserting record %d", seq), err)
		}
	}
	if _, err := tx.ExecContext(ctx, sqlUpdateHead, seq, prev); err != nil {
		return 0, nil, unavailable("updating chain head", err)
	}
	return seq, in, nil
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
