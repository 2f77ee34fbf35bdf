package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/airlock-dev/airlock/internal/kit/percall"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// The per-call reads from memory, seen through to the store (issue 27).
//
// Every HTTP request read its session row and every call its context row
// (and the rows of the context's ancestors): ~50 µs a call of SQL and
// decoding, for rows that change a few times a session. They are cached
// here, and the cache is checked against the store on every read, so a
// phase change, a restriction, a closed or revoked session — made by this
// process, another process on the file or another instance on the
// database — is seen by the next call as it was before:
//
//   - state_version (migration 11) holds a counter that the database
//     itself moves, by trigger, on every insert, update or delete of
//     contexts or transport_sessions, whoever writes them (a program
//     without the triggers cannot open the file: it is at a newer schema
//     version). On PostgreSQL the triggers are deferred constraint
//     triggers: the row is updated at commit, after every other lock the
//     transaction takes, so it adds no lock order to deadlock on.
//   - A cached row is the row as read after the counter was read with a
//     given value; it is served only while the counter still has that
//     value, read again for this read. So a served row is the row as it
//     is at that second read, exactly as a direct read would give it.
//   - The counter and the kill switch are read together, in one probe
//     ([killCache.state]): on SQLite PRAGMA data_version on a connection
//     of the probe's own (it changes only when another connection has
//     committed to the file), and the two values re-read only then; on
//     PostgreSQL one round trip. A caller who asks while a probe is in
//     flight waits for the next one to begin and uses its answer, so a
//     probe that serves a caller always began after the caller asked.
//     Within one HTTP request the gate puts a memo in the context
//     (package percall): the request's first read probes and its other
//     reads (session, kill switch, contexts) share that probe, which began
//     after the request did; a write of the call's own to contexts or
//     sessions forgets it, so the call sees its own write.
//
// Read-only handles (the CLI) cache nothing: they read the rows.

// stateMigration is migration 11: the change counter and its triggers.
var stateMigration = migration{
	version: 11,
	name:    "a change counter for cached contexts and sessions",
	steps: []step{
		table{name: "state_version", cols: []column{
			{"id", integer, primaryKey | singleRow},
			{"n", bigint, notNull},
		}},
		stmt(`INSERT INTO state_version (id, n) VALUES (1, 0)`),
		sqliteOnly(stateTriggers("contexts", "transport_sessions")),
		pgOnly{
			`CREATE FUNCTION airlock_state_bump() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN
				UPDATE state_version SET n = n + 1 WHERE id = 1;
				RETURN NULL;
			END $$`,
			`CREATE CONSTRAINT TRIGGER contexts_state_bump AFTER INSERT OR UPDATE OR DELETE ON contexts
				DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION airlock_state_bump()`,
			`CREATE TRIGGER contexts_state_truncate AFTER TRUNCATE ON contexts
				FOR EACH STATEMENT EXECUTE FUNCTION airlock_state_bump()`,
			`CREATE CONSTRAINT TRIGGER transport_sessions_state_bump AFTER INSERT OR UPDATE OR DELETE ON transport_sessions
				DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION airlock_state_bump()`,
			`CREATE TRIGGER transport_sessions_state_truncate AFTER TRUNCATE ON transport_sessions
				FOR EACH STATEMENT EXECUTE FUNCTION airlock_state_bump()`,
		},
	},
}

// stateTriggers are SQLite's triggers moving the counter on every write
// of tables.
func stateTriggers(tables ...string) []string {
	var out []string
	for _, t := range tables {
		for _, op := range []string{"INSERT", "UPDATE", "DELETE"} {
			out = append(out, `CREATE TRIGGER `+t+`_state_`+op+` AFTER `+op+` ON `+t+`
			BEGIN UPDATE state_version SET n = n + 1 WHERE id = 1; END`)
		}
	}
	return out
}

const (
	// sqlProbeState reads the kill switch and the change counter in one
	// statement (a NULL value: the switch was never set).
	sqlProbeState = `SELECT (SELECT value FROM settings WHERE name = 'kill_switch'), (SELECT n FROM state_version WHERE id = 1)`
	// sqlProbeKill is the probe of a read-only handle, which caches
	// nothing: the counter is -1.
	sqlProbeKill = `SELECT (SELECT value FROM settings WHERE name = 'kill_switch'), -1`
)

// probed is what one probe of the store read.
type probed struct {
	on  bool  // the kill switch
	ver int64 // state_version.n; -1: nothing may be cached
}

// killCache probes the store's state for the per-call path: the kill
// switch and the change counter, as last read, and on SQLite the probe
// connection's data_version at or before that read.
type killCache struct {
	mu   sync.Mutex
	conn *sql.Conn // SQLite: the probe's own connection
	db   *sql.DB   // PostgreSQL: the read pool
	// Statements prepared once: the hot path parses no SQL.
	probe, get *sql.Stmt
	valid      bool
	version    int64 // data_version
	last       probed
	// began counts probes begun; served is the number of the last one
	// that succeeded (see state).
	began  atomic.Uint64
	served uint64
	// probes and reads count data_version probes and state reads, for
	// tests and benchmarks.
	probes, reads int64
}

func (c *killCache) open(r *sql.DB, pg, versioned bool) error {
	q := sqlProbeKill
	if versioned {
		q = sqlProbeState
	}
	ctx := context.Background()
	var err error
	if pg {
		c.db = r
		if c.get, err = r.PrepareContext(ctx, q); err != nil {
			return fmt.Errorf("store: kill switch statements: %w", err)
		}
		return nil
	}
	conn, err := r.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: kill switch connection: %w", err)
	}
	if c.probe, err = conn.PrepareContext(ctx, sqlDataVersion); err == nil {
		c.get, err = conn.PrepareContext(ctx, q)
	}
	c.conn = conn
	if err != nil {
		return fmt.Errorf("store: kill switch statements: %w", err)
	}
	return nil
}

func (c *killCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, st := range []*sql.Stmt{c.probe, c.get} {
		if st != nil {
			errs = append(errs, st.Close())
		}
	}
	if c.conn != nil {
		errs = append(errs, c.conn.Close())
	}
	c.conn, c.db, c.probe, c.get = nil, nil, nil, nil
	return errors.Join(errs...)
}

// state returns the kill switch and the change counter as a probe that
// began after the call to state read them — or, within one call whose
// context carries a memo (percall, made where the call began), after the
// call began: the call's first read probes, the rest share it. Callers
// queue on the probe's mutex; one that finds a probe completed that
// began after it arrived takes that probe's answer instead of running
// another.
func (c *killCache) state(ctx context.Context) (probed, error) {
	memo := percall.From(ctx)
	if v, ok := memo.Load(); ok {
		return v.(probed), nil
	}
	p, err := c.shared(ctx)
	if err == nil {
		memo.Store(p)
	}
	return p, err
}

// shared is state's probe, shared with every caller that asked while it
// began.
func (c *killCache) shared(ctx context.Context) (probed, error) {
	arrived := c.began.Load()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.served > arrived {
		return c.last, nil
	}
	n := c.began.Add(1)
	p, err := c.run(ctx)
	if err != nil {
		c.valid = false
		return probed{on: true, ver: -1}, err
	}
	c.last, c.served = p, n
	return p, nil
}

// run is one probe, under c.mu.
func (c *killCache) run(ctx context.Context) (probed, error) {
	if c.get == nil {
		return probed{}, fmt.Errorf("store: kill switch: %w", ErrClosed)
	}
	if c.conn != nil {
		// SQLite: two point reads in the file, bounded by the busy
		// timeout — not worth watching the caller's cancellation, which
		// costs database/sql and the driver a goroutine each per statement
		// (~40% of the probe, issue 27). PostgreSQL's round trip stays
		// cancellable.
		ctx = context.WithoutCancel(ctx)
	}
	var v int64
	if c.probe != nil {
		if err := c.probe.QueryRowContext(ctx).Scan(&v); err != nil {
			return probed{}, fmt.Errorf("store: kill switch: %w", err)
		}
		c.probes++
		if c.valid && v == c.version {
			return c.last, nil
		}
	}
	// data_version is read before the values: if a commit lands in
	// between, the values are newer than the version says and the next
	// probe reads them again. Never the other way round, which could
	// serve a stale value.
	var s sql.NullString
	var p probed
	err := c.get.QueryRowContext(ctx).Scan(&s, &p.ver)
	if err == nil && !s.Valid {
		err = sql.ErrNoRows
	}
	if p.on, err = parseKillSwitch(err, s.String); err != nil {
		return probed{}, err
	}
	c.reads++
	c.valid, c.version = true, v
	return p, nil
}

// rowCache holds rows of one table by id, each with the counter value it
// was read under; all of them are from one counter value (an entry from an
// older one is dropped with the rest).
type rowCache[T any] struct {
	mu  sync.Mutex
	ver int64
	m   map[string]T
}

// maxCachedRows bounds each cache; past it the cache starts over.
const maxCachedRows = 4096

func (c *rowCache[T]) get(id string, ver int64) (T, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[id]
	if !ok || c.ver != ver {
		var zero T
		return zero, false
	}
	return v, true
}

func (c *rowCache[T]) put(id string, ver int64, v T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case ver < c.ver:
		return // read under an older counter than what is cached
	case ver > c.ver || c.m == nil || len(c.m) >= maxCachedRows:
		c.ver, c.m = ver, make(map[string]T)
	}
	c.m[id] = v
}

// cachedByID is getByID through c: the row from memory while the store's
// change counter is what it was when the row was read (see above), else
// read and remembered. What it returns is the caller's own copy.
func cachedByID[T any](ctx context.Context, db *DB, c *rowCache[T], kind, id, query string, scan func(scanner) (T, error), clone func(T) T) (T, error) {
	if db.w == nil {
		return getByID(ctx, db, kind, id, query, scan)
	}
	if err := db.readableCtx(ctx, "get "+kind); err != nil {
		var zero T
		return zero, err
	}
	st, err := db.kill.state(ctx)
	if err != nil || st.ver < 0 {
		return getByID(ctx, db, kind, id, query, scan)
	}
	if v, ok := c.get(id, st.ver); ok {
		return clone(v), nil
	}
	v, err := getByID(ctx, db, kind, id, query, scan)
	if err != nil {
		return v, err
	}
	c.put(id, st.ver, v)
	return clone(v), nil
}

func cloneContext(c *contexts.Context) *contexts.Context {
	out := *c
	out.Pools, out.Env = slices.Clone(c.Pools), maps.Clone(c.Env)
	return &out
}

func cloneSession(s *contexts.Session) *contexts.Session {
	out := *s
	return &out
}
