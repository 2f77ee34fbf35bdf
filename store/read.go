package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// scanPage is how many records Scan reads per query. Paging keeps no read
// transaction open across the callback, so a slow consumer (an export to a
// pipe, tail --follow) never holds back the WAL checkpoint.
const scanPage = 512

// LastSeq returns the seq of the newest record, 0 for an empty chain. It
// reads the chain head, which every append updates in its own transaction.
func (db *DB) LastSeq(ctx context.Context) (int64, error) {
	if db.isClosed() {
		return 0, fmt.Errorf("store: last seq: %w", ErrClosed)
	}
	var seq int64
	if err := db.r.QueryRowContext(ctx, sqlLastSeq).Scan(&seq); err != nil {
		return 0, fmt.Errorf("store: last seq: %w", err)
	}
	return seq, nil
}

// Tail returns the last n records in ascending seq order (fewer if the
// chain is shorter). n <= 0 returns none.
func (db *DB) Tail(ctx context.Context, n int) ([]audit.Record, error) {
	if err := db.auditReadable(ctx, "tail"); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	recs, err := db.queryRecords(ctx, sqlTail, int64(n))
	if err != nil {
		return nil, fmt.Errorf("store: tail: %w", err)
	}
	out := make([]audit.Record, len(recs))
	for i, r := range recs {
		out[len(recs)-1-i] = *r
	}
	return out, nil
}

// Scan calls fn for every record with seq > afterSeq, in ascending order,
// until the records run out or fn returns an error, which Scan returns as
// is. Records appended while Scan runs may or may not be included; a
// follower polls by calling Scan again with the last seq it saw. The *audit.Record
// is fn's to keep.
func (db *DB) Scan(ctx context.Context, afterSeq int64, fn func(*audit.Record) error) error {
	for {
		if err := db.auditReadable(ctx, "scan"); err != nil {
			return err
		}
		page, err := db.scanPage(ctx, afterSeq)
		if err != nil {
			return err
		}
		for _, r := range page {
			if err := fn(r); err != nil {
				return err
			}
			afterSeq = r.Seq
		}
		if len(page) < scanPage {
			return nil
		}
	}
}

func (db *DB) scanPage(ctx context.Context, afterSeq int64) ([]*audit.Record, error) {
	page, err := db.queryRecords(ctx, sqlScanAfter, afterSeq, int64(scanPage))
	if err != nil {
		return nil, fmt.Errorf("store: scan: %w", err)
	}
	return page, nil
}

// queryRecords runs query, which selects recordColumns, on the read pool
// and decodes the records it selects.
func (db *DB) queryRecords(ctx context.Context, query string, args ...any) ([]*audit.Record, error) {
	rows, err := db.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	raws, err := readRaws(rows)
	if err != nil {
		return nil, err
	}
	return db.decodeRows(ctx, raws)
}

// readRaws reads and closes rows selected with recordColumns.
func readRaws(rows *sql.Rows) ([]rawRow, error) {
	defer rows.Close()
	var out []rawRow
	for rows.Next() {
		var r rawRow
		if err := scanRaw(rows, &r); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
