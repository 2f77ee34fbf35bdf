package store

import (
	"context"
	"database/sql"
)

// rowsQuerier is what *sql.DB and *sql.Tx share for many-row reads.
type rowsQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// scanner is one selected row, *sql.Row or *sql.Rows alike, so that one
// scan function serves a single-row read and a many-row one.
type scanner = interface{ Scan(...any) error }

// scanRows runs query with arg and calls each for every row it selects.
func scanRows(ctx context.Context, q rowsQuerier, query, arg string, each func(scanner) error) error {
	rows, err := q.QueryContext(ctx, query, arg)
	if err != nil {
		return err
	}
	defer rows.Close()
	return eachRow(rows, each)
}

// eachRow calls each for every row of rows — database/sql's or pgx's
// (pipetx.go) — and then returns rows' own error; each's first error ends
// the read.
func eachRow(rows interface {
	scanner
	Next() bool
	Err() error
}, each func(scanner) error) error {
	for rows.Next() {
		if err := each(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// queryAll runs query and returns every row it selects, in order, as scan
// reads it; the first error ends the read.
func queryAll[T any](ctx context.Context, q rowsQuerier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	err = eachRow(rows, func(r scanner) error {
		v, err := scan(r)
		out = append(out, v)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
