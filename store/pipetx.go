package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// pipeTx is a PostgreSQL write transaction as a [wtx] (wtx.go): the
// statements that need no answer wait in a batch, and the batch goes out
// in pgx's pipeline mode — every statement, then one Sync — with the next
// one that does, or with the commit.
type pipeTx struct {
	conn   *pgx.Conn
	b      pgx.Batch
	sent   func() // DB.sentHook's, or nil
	failed error  // the first send's failure, for a read that waited on it
}

func (t *pipeTx) exec(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	t.b.Queue(query, args...).Fn = func(br pgx.BatchResults) error {
		ct, err := br.Exec()
		n = ct.RowsAffected()
		return err
	}
	err := t.send(ctx) // before n is read
	return n, err
}

func (t *pipeTx) later(_ context.Context, s laterStmt) error {
	if s.want < 0 {
		t.b.Queue(s.query, s.args...).Fn = func(br pgx.BatchResults) error {
			ct, err := br.Exec()
			return s.check(ct.RowsAffected(), err)
		}
		return nil
	}
	// A guarded step may be sent with the commit, so its guard is checked
	// by the database: when the statement affects other than want rows the
	// division fails, which aborts the transaction and the commit after
	// it. Checked here, after the commit was sent, it would be too late.
	q := fmt.Sprintf(`WITH guarded AS (%s RETURNING 1) SELECT 1 / (count(*) = $%d)::int FROM guarded`, s.query, len(s.args)+1)
	args := append(s.args[:len(s.args):len(s.args)], s.want)
	t.b.Queue(q, args...).Fn = func(br pgx.BatchResults) error {
		_, err := br.Exec()
		if pe := (*pgconn.PgError)(nil); errors.As(err, &pe) && pe.Code == "22012" { // division_by_zero
			return s.mismatch(errors.New("the rows affected were not as many as the guard wants"))
		}
		return s.check(s.want, err)
	}
	return nil
}

func (t *pipeTx) row(ctx context.Context, query string, args ...any) scanner {
	return pipeRow{t, ctx, query, args}
}

// pipeRow sends its query, and what waits before it, when scanned.
type pipeRow struct {
	t     *pipeTx
	ctx   context.Context
	query string
	args  []any
}

func (r pipeRow) Scan(dest ...any) error {
	return r.t.prefetch(r.ctx, r.query, r.args, dest...)()
}

func (t *pipeTx) prefetch(ctx context.Context, query string, args []any, dest ...any) func() error {
	var (
		done bool
		err  error
	)
	t.b.Queue(query, args...).Fn = func(br pgx.BatchResults) error {
		done, err = true, br.QueryRow().Scan(dest...)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // an answer, not a failure: the reads after it still run
		}
		return err
	}
	return func() error {
		if !done {
			if serr := t.send(ctx); serr != nil && !done {
				return serr
			}
		}
		if !done { // the batch it was in failed before it: that failure
			if t.failed != nil {
				return fmt.Errorf("store: a read of the transaction's was not answered: %w", t.failed)
			}
			return errors.New("store: a read of the transaction's was not answered")
		}
		return err
	}
}

func (t *pipeTx) each(ctx context.Context, query string, args []any, fn func(scanner) error) error {
	t.b.Queue(query, args...).Fn = func(br pgx.BatchResults) error {
		rows, err := br.Query()
		if err != nil {
			return err
		}
		defer rows.Close()
		return eachRow(rows, fn)
	}
	return t.send(ctx)
}

// send sends what waits, in one round trip, and runs each statement's
// check in order; the first failure is the result.
func (t *pipeTx) send(ctx context.Context) error {
	if len(t.b.QueuedQueries) == 0 {
		return nil
	}
	b := t.b
	t.b = pgx.Batch{}
	if t.sent != nil {
		t.sent()
	}
	err := t.conn.SendBatch(ctx, &b).Close()
	if err != nil && t.failed == nil {
		t.failed = err
	}
	return err
}

// inPipeTx is [DB.inTx] for PostgreSQL with fn's statements sent together
// (wtx.go): the begin and the locks go out with fn's first statement that
// needs an answer, and the commit with what is still waiting at the end.
// The transaction runs on a connection of the writing pool, through pgx
// itself, since database/sql sends one statement a round trip.
func (db *DB) inPipeTx(ctx context.Context, what string, o txOpts, fn func(t wtx) error) error {
	failed := func(err error) error {
		if o.chain {
			return unavailable(what, err)
		}
		return writeError(ctx, what, err)
	}
	conn, err := db.w.Conn(ctx)
	if err != nil {
		return failed(err)
	}
	defer conn.Close()
	var result error
	rawErr := conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("store: a PostgreSQL connection of type %T", dc)
		}
		t := &pipeTx{conn: sc.Conn()}
		if h := db.sentHook.Load(); h != nil {
			t.sent = *h
		}
		t.b.Queue("begin")
		for _, n := range o.locks {
			t.b.Queue(`SELECT pg_advisory_xact_lock($1)`, advisoryKey(n))
		}
		if err := fn(t); err != nil {
			if err != errRollback {
				result = err
			}
			return t.rollback()
		}
		// A commit of an aborted transaction answers ROLLBACK, not an
		// error: read as success it would report records never written.
		t.b.Queue("commit").Exec(func(ct pgconn.CommandTag) error {
			if ct.String() != "COMMIT" {
				return fmt.Errorf("store: the transaction ended with %q, not COMMIT", ct.String())
			}
			return nil
		})
		if err := t.send(context.Background()); err != nil {
			result = failed(err)
			return t.rollback()
		}
		return nil
	})
	if result == nil && rawErr != nil {
		result = failed(rawErr)
	}
	return result
}

// rollback ends a transaction that did not commit, and leaves the
// connection idle or has the pool drop it (driver.ErrBadConn).
func (t *pipeTx) rollback() error {
	t.b = pgx.Batch{}
	pc := t.conn.PgConn()
	if pc.IsClosed() {
		return driver.ErrBadConn
	}
	if pc.TxStatus() == 'I' { // nothing was begun: the first send failed before it
		return nil
	}
	// Not a caller's context: the rollback must run even when it ended.
	if _, err := t.conn.Exec(context.Background(), "rollback"); err != nil || pc.TxStatus() != 'I' {
		return errors.Join(driver.ErrBadConn, err)
	}
	return nil
}
