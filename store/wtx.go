package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// The audit commit's statements, and what each needs back (issue 27).
//
// On PostgreSQL a batch of one read_pool_file call was eight round trips:
// begin, the context's live totals FOR UPDATE, the label's row, the
// totals' update, the chain head FOR UPDATE, the record, the head's
// update, commit. Each one wakes the instance and its backend; at three
// instances, where a batch holds about one call, they were most of what
// made a call cost more CPU than at one (BENCHMARKS.md, session 13). Yet
// most of them need no answer before the next is sent: only the two
// FOR UPDATE reads do.
//
// wtx is a write transaction as the audit commit uses it, saying which
// statements need an answer. A statement whose only answer is "it
// worked, on this many rows" is given to [wtx.later]; one whose answer is
// needed now to [wtx.row], [wtx.each] or [wtx.exec]; a read that can wait
// for the next one to [wtx.prefetch]. On PostgreSQL (pipetx.go) later
// and prefetch queue their statement, and the queue goes out with the
// next statement that needs an answer, or with the commit, in one round
// trip: that batch is two (begin, the context's row made sure of, its
// totals and the head FOR UPDATE; the label, the totals' update, the
// record, the head's update and commit),
// and the head is locked for one round trip, not three — which is what
// bounds appends across instances when the database is a network away.
// On SQLite a statement costs no round trip, and every one runs at once
// through the writer's prepared statement, as it always did.
//
// A queued statement's failure fails the transaction exactly as it did
// when it ran at once: nothing is committed, and the error names the
// statement. It is only reported later — at the next answer or the
// commit — and on PostgreSQL a failed statement aborts the transaction
// anyway, so nothing sent after it could have taken effect.
type wtx interface {
	// exec runs query now and returns the rows it affected.
	exec(ctx context.Context, query string, args ...any) (int64, error)
	// later runs s before the next answer is read or the transaction
	// commits; see laterStmt for what it checks.
	later(ctx context.Context, s laterStmt) error
	// row reads one row (sql.ErrNoRows when there is none).
	row(ctx context.Context, query string, args ...any) scanner
	// prefetch is row for a read that can wait: it goes out with the
	// next statement that needs an answer (or with the wait), and wait
	// returns its Scan's result, sql.ErrNoRows included.
	prefetch(ctx context.Context, query string, args []any, dest ...any) (wait func() error)
	// each reads query's rows, handing each to fn (eachRow).
	each(ctx context.Context, query string, args []any, fn func(scanner) error) error
}

// laterStmt is a statement given to [wtx.later].
type laterStmt struct {
	what  string // names the statement in an error
	query string
	args  []any
	// want is the number of rows the statement must affect (any, when
	// negative); otherwise the transaction fails with moved (a guarded
	// update whose guard no longer holds).
	want  int64
	moved error
}

// check is what a step's outcome means: n rows affected, or err.
func (s *laterStmt) check(n int64, err error) error {
	switch {
	case err != nil:
		return fmt.Errorf("%s: %w", s.what, err)
	case s.want >= 0 && n != s.want:
		return s.mismatch(fmt.Errorf("%d rows affected, not %d", n, s.want))
	}
	return nil
}

// mismatch is the step's error when it affected other than want rows.
func (s *laterStmt) mismatch(why error) error {
	if s.moved != nil {
		why = s.moved
	}
	return fmt.Errorf("%s: %w", s.what, why)
}

// inWriteTx runs fn in one write transaction set up as o says, as
// [DB.inTx] does; on PostgreSQL with fn's statements sent together where
// they can be (pipetx.go).
func (db *DB) inWriteTx(ctx context.Context, what string, o txOpts, fn func(t wtx) error) error {
	if db.d.advisory {
		return db.inPipeTx(ctx, what, o, fn)
	}
	return db.inTx(ctx, what, o, func(tx *sql.Tx) error { return fn(sqlTx{db, tx}) })
}

// sqlTx is a database/sql transaction as a [wtx]: every statement runs at
// once, through the writer's prepared statement when there is one (none
// without a db: a migration's).
type sqlTx struct {
	db *DB
	tx *sql.Tx
}

func (t sqlTx) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := t.db.execW(ctx, t.tx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (t sqlTx) later(ctx context.Context, s laterStmt) error {
	return s.check(t.exec(ctx, s.query, s.args...))
}

func (t sqlTx) row(ctx context.Context, query string, args ...any) scanner {
	return t.db.rowW(ctx, t.tx, query, args...)
}

func (t sqlTx) prefetch(ctx context.Context, query string, args []any, dest ...any) func() error {
	err := t.row(ctx, query, args...).Scan(dest...)
	return func() error { return err }
}

func (t sqlTx) each(ctx context.Context, query string, args []any, fn func(scanner) error) error {
	rows, err := t.db.queryW(ctx, t.tx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return eachRow(rows, fn)
}

// wtxExecer is a wtx where an execer is asked for; its statements run at
// once.
type wtxExecer struct{ t wtx }

func (e wtxExecer) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	n, err := e.t.exec(ctx, query, args...)
	return rowsAffected(n), err
}

// rowsAffected is a statement's result as [wtx.exec] gives it.
type rowsAffected int64

func (n rowsAffected) RowsAffected() (int64, error) { return int64(n), nil }

func (rowsAffected) LastInsertId() (int64, error) {
	return 0, errors.New("store: no insert id")
}
