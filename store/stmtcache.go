package store

import (
	"context"
	"database/sql"
	"errors"
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
