package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// VerifyResult is the verdict of [DB.Verify].
type VerifyResult struct {
	// Records is how many records the chain holds: those in the store and,
	// if the store was rotated, those before its anchor.
	Records int64
	// Anchor is where the store's chain starts (record 1 unless rotated;
	// the caller checks its MAC with CheckAnchor).
	Anchor Anchor
	// OK is true when every record and the chain head check out.
	OK bool
	// FirstBad is the seq of the first record that is missing, altered,
	// out of place or cannot be vouched for; 0 when OK.
	FirstBad int64
	// Problem says what is wrong at FirstBad, for an operator; "" when OK.
	Problem string
}

// Verify re-reads the whole audit chain in one read transaction and checks,
// record by record in seq order, that:
//
//   - seqs run 1, 2, 3, ... with no gap or duplicate (a deleted or inserted
//     row shows here);
//   - each record's prev_hash is the hash of the record before it (genesis:
//     64 zeros), so a record moved, removed or slipped in breaks the link;
//   - each record's hash is recomputed from its stored fields (an edited
//     field, or a row's contents swapped with another's, shows here);
//   - the audit_head row names the last record's seq and hash, so deleting
//     or appending records at the end without the writer shows too.
//
// A tampered chain is reported in the result with a nil error; the error is
// for failing to read at all. What Verify cannot detect is described in the
// package documentation.
func (db *DB) Verify(ctx context.Context) (VerifyResult, error) {
	return db.VerifyFrom(ctx, 0, "")
}

// VerifyFrom is Verify of the records after afterSeq only, trusting the
// records up to it as an earlier Verify found them: the record at afterSeq
// must still carry afterHash (else the result names it), and the chain
// goes on from there. O(new records): for `audit verify --incremental`
// from a signed marker of the last full check. afterSeq 0 is Verify.
func (db *DB) VerifyFrom(ctx context.Context, afterSeq int64, afterHash string) (VerifyResult, error) {
	if err := db.auditReadable(ctx, "verify"); err != nil {
		return VerifyResult{}, err
	}
	// One transaction, so the rows, the strings and the head are one
	// snapshot even while appends go on.
	tx, err := db.snapshot(ctx)
	if err != nil {
		return VerifyResult{}, fmt.Errorf("store: verify: %w", err)
	}
	defer tx.Rollback()

	res := VerifyResult{OK: true}
	a, err := readAnchor(ctx, tx)
	if err != nil {
		return VerifyResult{}, fmt.Errorf("store: verify: reading the anchor: %w", err)
	}
	res.Anchor = a
	// The chain in the store starts at the anchor (record 1 unless records
	// were rotated out); a marker from before the last rotation is of no
	// use, so that is a full check.
	wantSeq, prev := a.First, hashBytes(a.PrevHash)
	res.Records = a.First - 1
	if afterSeq < a.First {
		afterSeq = 0
	}
	if afterSeq > 0 {
		var h []byte
		if err := tx.QueryRowContext(ctx, sqlHashAt, afterSeq).Scan(&h); err != nil || hashText(h) != afterHash {
			res.OK, res.FirstBad = false, afterSeq
			res.Problem = fmt.Sprintf("record %d is not the one the last verification vouched for (removed, edited or the chain rolled back)", afterSeq)
			return res, nil
		}
		res.Records = afterSeq
		wantSeq, prev = afterSeq+1, hashBytes(afterHash)
	}
	strs, err := loadStrings(ctx, tx)
	if err != nil {
		return VerifyResult{}, fmt.Errorf("store: verify: %w", err)
	}
	v := newVerifier(strs, db.d.packed)
	v.start()
	r, err := db.readChunks(ctx, tx, v, a, afterSeq, wantSeq, prev)
	if r.n == 0 {
		r.lastSeq, r.last = wantSeq-1, prev
	}
	v.stop()
	if err != nil {
		return VerifyResult{}, fmt.Errorf("store: verify: %w", err)
	}
	res.Records += r.n
	if f := v.first(); f != nil {
		res.OK, res.FirstBad, res.Problem = false, f.seq, f.problem
		return res, nil
	}
	bad := func(seq int64, format string, a ...any) {
		if res.OK {
			res.OK, res.FirstBad, res.Problem = false, seq, fmt.Sprintf(format, a...)
		}
	}
	checkHead(ctx, tx, r.lastSeq, hashText(r.last), bad)
	return res, nil
}

// splitMin is how many records a verify must cover before it reads them as
// two chunks at once, each on its own connection: the driver's per-row cost
// is most of a full verify's, and one reader cannot use a second core.
var splitMin int64 = 200_000

// readChunks reads the rows after afterSeq into v — as one chunk in tx, or,
// on SQLite when there are many, as two read at once: the first half in a
// second read transaction, the rest (with whatever follows the head) in tx,
// whose snapshot the head is checked in. Records up to the head are never
// rewritten by the store, so two snapshots agree on the first half; a
// concurrent edit of it by someone else may be seen by one and not the
// other (see SECURITY.md). The seam is checked here: the first half must
// end at its last seq, and the second half's first prev_hash must be that
// record's hash.
func (db *DB) readChunks(ctx context.Context, tx *sql.Tx, v *verifier, a Anchor, afterSeq, wantSeq int64, prev []byte) (chunkResult, error) {
	var head int64
	base := wantSeq - 1 // the chunks split the records after it
	var tx0 *sql.Tx
	if err := tx.QueryRowContext(ctx, sqlLastSeq).Scan(&head); err == nil && db.d.packed && head-base >= splitMin {
		var err error
		if tx0, err = db.snapshot(ctx); err != nil {
			return chunkResult{}, err
		}
		defer tx0.Rollback()
		// A rotation between the two snapshots moved the anchor: the
		// first half would miss records that tx still has. Read it all
		// in tx then.
		if a0, err := readAnchor(ctx, tx0); err != nil || a0 != a {
			tx0.Rollback()
			tx0 = nil
		}
	}
	if tx0 == nil {
		query, args := db.d.verifyAll, []any(nil)
		if afterSeq > 0 {
			query, args = db.d.verifyAfter, []any{afterSeq}
		}
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return chunkResult{}, err
		}
		defer rows.Close()
		r := v.read(rows, 0, wantSeq, prev)
		return r, r.err
	}
	mid := base + (head-base)/2
	query, args := sqliteVerifyUpTo, []any{mid}
	if afterSeq > 0 {
		query, args = sqliteVerifyRange, []any{afterSeq, mid}
	}
	rows0, err := tx0.QueryContext(ctx, query, args...)
	if err != nil {
		return chunkResult{}, err
	}
	defer rows0.Close()
	rows1, err := tx.QueryContext(ctx, db.d.verifyAfter, mid)
	if err != nil {
		return chunkResult{}, err
	}
	defer rows1.Close()
	first := make(chan chunkResult, 1)
	go func() { first <- v.read(rows0, 0, wantSeq, prev) }()
	r1 := v.read(rows1, 1, mid+1, nil)
	r0 := <-first
	if err := errors.Join(r0.err, r1.err); err != nil {
		return chunkResult{}, err
	}
	switch {
	case r1.n == 0:
		return chunkResult{n: r0.n, lastSeq: r0.lastSeq, last: r0.last}, nil
	case r0.lastSeq != mid:
		v.report(verdict{chunk: 1, rank: -1, seq: r0.lastSeq + 1,
			problem: fmt.Sprintf("seq %d missing (next record is %d)", r0.lastSeq+1, r1.firstSeq)})
	case r1.firstPrev != nil && !bytes.Equal(r1.firstPrev, r0.last):
		v.report(verdict{chunk: 1, rank: rankLink, seq: mid + 1, problem: linkProblem(mid + 1)})
	}
	return chunkResult{n: r0.n + r1.n, lastSeq: r1.lastSeq, last: r1.last}, nil
}

// loadStrings reads every interned string in the verifier's snapshot.
func loadStrings(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (map[int64]string, error) {
	rows, err := q.QueryContext(ctx, sqlAllStrings)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := make(map[int64]string)
	for rows.Next() {
		var id int64
		var v sql.RawBytes
		if err := rows.Scan(&id, &v); err != nil {
			return nil, err
		}
		m[id] = string(v)
	}
	return m, rows.Err()
}

// checkHead compares the audit_head row with the last record seen.
func checkHead(ctx context.Context, q querier, last int64, lastHash string, bad func(int64, string, ...any)) {
	var headSeq int64
	var headHash string
	if err := q.QueryRowContext(ctx, sqlReadHead).Scan(&headSeq, &headHash); err != nil {
		bad(last+1, "chain head unreadable or missing: %v", err)
		return
	}
	switch {
	case headSeq > last:
		bad(last+1, "chain head says %d records but the log ends at %d (records deleted from the end)", headSeq, last)
	case headSeq < last:
		bad(headSeq+1, "log continues past the chain head %d to %d (records appended outside the store)", headSeq, last)
	case headHash != lastHash:
		bad(max(last, 1), "chain head hash does not match record %d", last)
	}
}
