package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// convertPage is how many version-4 rows migration 6 reads at a time; rows
// are read page by page, not streamed, because a PostgreSQL connection
// cannot write while a result is open.
const convertPage = 1000

// errUnconvertible: a version-4 row whose time or truncated value cannot be
// represented (only a row edited by hand). The migration fails, and with it
// Open, rather than drop or repair the row: the operator verifies the file
// with the previous version first.
var errUnconvertible = errors.New("audit record cannot be converted")

// convertAuditLog is migration 6's data step: it copies every row of the
// version-4 audit_log into audit_records in the compact form, exactly —
// every hash and prev_hash as stored, so the chain verifies after the
// migration if and only if it did before (TestMigrateV4File,
// TestMigrateV4, both engines).
func convertAuditLog(ctx context.Context, tx *sql.Tx, d *dialect) error {
	in := &interner{ids: &strIDs{}, d: d, t: sqlTx{nil, tx}}
	ins, err := tx.PrepareContext(ctx, sqlInsertRecord)
	if err != nil {
		return err
	}
	defer ins.Close()
	copyRows := func(query string, args ...any) (last int64, n int, err error) {
		page, err := readV4(ctx, tx, query, args...)
		if err != nil {
			return 0, 0, err
		}
		for _, r := range page {
			vals, err := in.rowArgs(ctx, r)
			if err != nil {
				return 0, 0, err
			}
			if _, err := ins.ExecContext(ctx, vals...); err != nil {
				return 0, 0, fmt.Errorf("converting record %d: %w", r.Seq, err)
			}
			last = r.Seq
		}
		return last, len(page), nil
	}
	if _, _, err := copyRows(sqlV4Stray); err != nil {
		return err
	}
	for after := int64(0); ; {
		last, n, err := copyRows(sqlV4Page, after, int64(convertPage))
		if err != nil {
			return err
		}
		if n < convertPage {
			return nil
		}
		after = last
	}
}

// readV4 reads version-4 audit_log rows, every field as its exact bytes.
func readV4(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]*audit.Record, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*audit.Record
	for rows.Next() {
		var (
			r          audit.Record
			at         string
			s          [19][]byte
			trunc      int64
			prev, hash []byte
		)
		err := rows.Scan(&r.Seq, &at, &s[0], &s[1], &s[2], &s[3], &s[4], &s[5],
			&s[6], &s[7], &s[8], &s[9], &s[10], &s[11], &s[12], &s[13], &s[14],
			&s[15], &s[16], &r.DurationMicros, &r.OutputBytes, &trunc, &s[17],
			&prev, &hash, &s[18])
		if err != nil {
			return nil, err
		}
		if r.Time, err = parseTime(at); err != nil {
			return nil, fmt.Errorf("record %d: time %q: %w", r.Seq, at, errUnconvertible)
		}
		if trunc != 0 && trunc != 1 {
			return nil, fmt.Errorf("record %d: truncated %d: %w", r.Seq, trunc, errUnconvertible)
		}
		r.Truncated = trunc == 1
		// auditColumns order of version 4: session_id .. reason, args,
		// outcome, violation, error_ref, error_text, (numbers), extra,
		// prev_hash, hash, instance.
		str := func(i int) string { return string(s[i]) }
		r.SessionID, r.ContextID, r.Principal, r.Role = str(0), str(1), str(2), str(3)
		r.Transport, r.Tool, r.Capability, r.Tier = str(4), str(5), str(6), str(7)
		r.Phase, r.Decision, r.RuleID, r.Reason = str(8), str(9), str(10), str(11)
		if len(s[12]) > 0 {
			r.Args = s[12]
		}
		r.Outcome, r.Violation, r.ErrorRef, r.Error = audit.Outcome(str(13)), str(14), str(15), str(16)
		if len(s[17]) > 0 {
			r.Extra = s[17]
		}
		r.Instance = str(18)
		r.PrevHash, r.Hash = string(prev), string(hash)
		out = append(out, &r)
	}
	return out, rows.Err()
}
