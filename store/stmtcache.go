package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// stmtCache holds statements prepared once on the read pool for the reads
// on every call's path (GetSession per HTTP request, GetContext per tool
// call). Without it modernc's driver parses the SQL on every query: under
// HTTP load sqlite3_prepare_v2 was ~25% of the server's CPU outside the
// audit commit (issue 11, BENCHMARKS.md). database/sql re-prepares a
// statement on each pool connection it lands on, once.
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// get returns query prepared on p, preparing it on first use.
func (c *stmtCache) get(ctx context.Context, p *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	st, err := p.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = st
	return st, nil
}

// lookup returns query's statement if it was prepared, else nil.
func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[query]
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, st := range c.m {
		errs = append(errs, st.Close())
	}
	c.m = nil
	return errors.Join(errs...)
}

// The writer's statements (issue 27: the audit commit parsed its SQL on
// every batch — the chain head's read and update, the labels'). On SQLite
// they are prepared once on the writing pool's one connection when the
// writer starts (preparing later would wait for that connection while a
// transaction holds it) and bound to each transaction; on PostgreSQL pgx
// keeps prepared statements per connection itself, so the transaction
// runs the text.

// writerQueries are the statements prepared for the writer.
var writerQueries = func() []string {
	qs := []string{sqlReadHead, sqlUpdateHeadFrom, sqlEnsureLive, sqlGetLive, sqlUpdateLive, sqlUpdateLiveFrom, sqlOldestLive, sqlEvictRange,
		sqlGetDeclaration, sqlUpdateDeclaration, sqlInsertDeclaration, sqlInternString, sqlStringID}
	qs = append(qs, pinWriterQueries...)
	for _, n := range chunkSizes {
		qs = append(qs, insertRecords.text[n], insertLabels.text[n])
	}
	return qs
}()

// prepareWriter prepares writerQueries on the writing pool (SQLite).
func (db *DB) prepareWriter() error {
	if db.d.advisory {
		return nil
	}
	for _, q := range writerQueries {
		if _, err := db.writes.get(context.Background(), db.w, q); err != nil {
			return fmt.Errorf("store: preparing the writer's statements: %w", err)
		}
	}
	return nil
}

// prepared is the writer's statement for query, or nil: then the query is
// parsed again on every use (the unpreparedHook, tests only, hears of it).
func (db *DB) prepared(query string) *sql.Stmt {
	if db == nil { // a migration's transaction (sqlTx)
		return nil
	}
	st := db.writes.lookup(query)
	if st == nil {
		if h := db.unpreparedHook.Load(); h != nil {
			(*h)(query)
		}
	}
	return st
}

// execW, queryW and rowW run query in tx: through the statement prepared
// for the writer when there is one.
func (db *DB) execW(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := db.prepared(query); st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// autocommit is the writing pool for query run as a transaction of its
// own, through the writer's statement when there is one.
func (db *DB) autocommit(query string) execer {
	if st := db.prepared(query); st != nil {
		return stmtRunner{st}
	}
	return db.w
}

// stmtRunner runs a prepared statement as an execer or a rowsQuerier (the
// query it is handed is the statement's own).
type stmtRunner struct{ st *sql.Stmt }

func (r stmtRunner) ExecContext(ctx context.Context, _ string, args ...any) (sql.Result, error) {
	return r.st.ExecContext(ctx, args...)
}

func (r stmtRunner) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return r.st.QueryContext(ctx, args...)
}

func (db *DB) queryW(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if st := db.prepared(query); st != nil {
		return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

func (db *DB) rowW(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if st := db.prepared(query); st != nil {
		return tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}
