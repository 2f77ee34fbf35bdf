package store

import (
	"context"
	"database/sql"
	"fmt"
)

// VerifyResult is the verdict of [DB.Verify].
type VerifyResult struct {
	// Records is how many records the audit log holds.
	Records int64
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
	if db.isClosed() {
		return VerifyResult{}, fmt.Errorf("store: verify: %w", ErrClosed)
	}
	// One transaction, so the rows, the strings and the head are one
	// snapshot even while appends go on.
	tx, err := db.r.BeginTx(ctx, db.d.verifyTx)
	if err != nil {
		return VerifyResult{}, fmt.Errorf("store: verify: %w", err)
	}
	defer tx.Rollback()

	res := VerifyResult{OK: true}
	wantSeq, prev := int64(1), hashBytes(genesisHash)
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
	query, args := sqlVerifyAll, []any(nil)
	if afterSeq > 0 {
		query, args = sqlVerifyAfter, []any{afterSeq}
	}
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return VerifyResult{}, fmt.Errorf("store: verify: %w", err)
	}
	defer rows.Close()
	v := newVerifier(strs)
	n, last, err := v.run(rows, wantSeq, prev)
	if err != nil {
		return VerifyResult{}, fmt.Errorf("store: verify: %w", err)
	}
	rows.Close()
	res.Records += n
	if f := v.first(); f != nil {
		res.OK, res.FirstBad, res.Problem = false, f.seq, f.problem
		return res, nil
	}
	bad := func(seq int64, format string, a ...any) {
		if res.OK {
			res.OK, res.FirstBad, res.Problem = false, seq, fmt.Sprintf(format, a...)
		}
	}
	checkHead(ctx, tx, wantSeq+n-1, hashText(last), bad)
	return res, nil
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
