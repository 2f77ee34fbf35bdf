package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// Options tunes a store. The zero value, and a nil *Options, mean defaults.
type Options struct {
	// BusyTimeout is how long a write waits for another connection or
	// process holding the write lock before failing with ErrUnavailable.
	// Default 5s.
	BusyTimeout time.Duration

	// MaxBatch bounds how many queued records one group commit writes.
	// Default 256.
	MaxBatch int

	// MaxPageCount, when positive, caps the file at that many pages (PRAGMA
	// max_page_count) on the writing connection; a write that needs more
	// fails as if the disk were full. For quotas, and for tests that need a
	// store which really cannot write.
	MaxPageCount int64

	// OnCommit, when set, is called with the chain's new last seq after
	// every commit of audit records by this handle, from the writing
	// goroutine: it must not block. The witness checkpointer uses it to
	// anchor the chain every N records.
	OnCommit func(lastSeq int64)

	// OnBatch, when set, is called after every group commit attempt with
	// the number of records in it, how long the write took and whether it
	// failed, from the writing goroutine: it must not block (metrics).
	OnBatch func(records int, took time.Duration, failed bool)

	// Instance names this process in every record it appends
	// ([Record.Instance]); empty records none. At most 128 bytes of UTF-8
	// without NUL.
	Instance string
}

const (
	defaultBusyTimeout = 5 * time.Second
	defaultMaxBatch    = 256
	queueSize          = 4096
)

func (o *Options) withDefaults() (Options, error) {
	var v Options
	if o != nil {
		v = *o
	}
	if v.BusyTimeout < 0 || v.MaxBatch < 0 || v.MaxPageCount < 0 {
		return v, errors.New("store: negative option")
	}
	if len(v.Instance) > 128 || !utf8.ValidString(v.Instance) || strings.IndexByte(v.Instance, 0) >= 0 {
		return v, errors.New("store: instance must be at most 128 bytes of UTF-8 without NUL")
	}
	if v.BusyTimeout == 0 {
		v.BusyTimeout = defaultBusyTimeout
	}
	if v.MaxBatch == 0 {
		v.MaxBatch = defaultMaxBatch
	}
	return v, nil
}

// DB is an open store. It is safe for concurrent use by many goroutines, and
// several DBs, in this process or others, may have the same file open.
type DB struct {
	path string
	opts Options
	d    *dialect

	// w is the writing pool: one connection, BEGIN IMMEDIATE, synchronous
	// FULL. Nil for a read-only handle.
	w *sql.DB
	// r serves reads; its connections are query_only.
	r *sql.DB

	// queue feeds the group-commit writer; closed by Close under mu.
	queue      chan *appendReq
	writerDone chan struct{}
	// head is the chain head the writer last committed (append.go).
	head headCache
	// lives are the provenance_live rows it last committed (livecache.go).
	lives liveCache

	// probing is the readiness probe in flight, if any (see Writable).
	probeMu sync.Mutex
	probing *probeRun

	mu     sync.RWMutex // guards closed against Append's send on queue
	closed bool

	keys keyCache
	kill killCache // the per-call probe of the kill switch and the change counter
	// sessions and contexts are the per-call rows, cached (statecache.go).
	sessRows rowCache[*contexts.Session]
	ctxRows  rowCache[*contexts.Context]
	// reads holds the per-call reads' statements, prepared once on r;
	// writes the audit commit's, prepared once on w.
	reads, writes stmtCache
	// prov holds the provenance last read per context (provcache.go).
	prov provCache
	// strs caches string ids to values for reads, ids values to ids for
	// the writer (rowcodec.go).
	strs strCache
	ids  strIDs
	// ckpt runs SQLite's WAL checkpoints off the commit path; nil on
	// PostgreSQL and for read-only handles.
	ckpt *checkpointer
	// gatheredHook, when set (tests only), is told each batch's size once
	// the writer has gathered it and before it commits: a test waits for
	// it instead of sleeping until the writer "must" be past gathering.
	gatheredHook atomic.Pointer[func(int)]
	// walkedHook, when set (tests only), counts the rows a content label's
	// eviction reads (labels.go).
	walkedHook atomic.Pointer[func(int)]
	// sentHook, when set (tests only), hears of every batch of statements
	// a PostgreSQL write transaction sends (pipetx.go): one round trip.
	sentHook atomic.Pointer[func()]
	// unpreparedHook, when set (tests only), hears of every query the
	// writer's helpers ran without a prepared statement (stmtcache.go).
	unpreparedHook atomic.Pointer[func(string)]
	// liveReads counts the provenance_live rows read (tests only).
	liveReads atomic.Int64
}

// Open opens the store at path for reading and writing, creating the file
// (mode 0600) and its parent directory (0700) when missing, and applies any
// migrations this program knows and the file lacks. A file migrated by a
// newer program is refused with ErrSchemaTooNew. The file is put in WAL mode;
// every commit is fsynced (synchronous=FULL) before the write returns.
func Open(path string, opts *Options) (*DB, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: resolving %q: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("store: creating directory for %q: %w", abs, err)
	}
	// SQLite would create the file 0644; create it first so the audit trail
	// and keys are never readable by other users, not even for a moment.
	// SQLite gives the -wal and -shm files the database file's mode.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: creating %q: %w", abs, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("store: creating %q: %w", abs, err)
	}

	db := &DB{path: abs, opts: o, d: sqliteDialect}
	ok := false
	defer func() {
		if !ok {
			db.closeAll()
		}
	}()
	pragmas := []string{
		"journal_mode(WAL)",
		"synchronous(FULL)",
		"foreign_keys(1)",
		// No checkpoint on the committing connection: the checkpointer
		// (checkpoint.go) runs them on its own.
		"wal_autocheckpoint(0)",
	}
	if o.MaxPageCount > 0 {
		pragmas = append(pragmas, "max_page_count("+strconv.FormatInt(o.MaxPageCount, 10)+")")
	}
	if db.w, err = openPool(abs, "rwc", o.BusyTimeout, "immediate", pragmas); err != nil {
		return nil, err
	}
	// One writing connection: the group-commit writer, migrations, keys and
	// settings queue for it, and it is never closed while idle.
	db.w.SetMaxOpenConns(1)
	if err := db.migrate(); err != nil {
		return nil, err
	}
	if db.r, err = openPool(abs, "rw", o.BusyTimeout, "", []string{"query_only(1)"}); err != nil {
		return nil, err
	}
	if err := db.kill.open(db.r, false, true); err != nil {
		return nil, err
	}
	if err := db.startCheckpointer(); err != nil {
		return nil, err
	}
	if err := db.startWriter(); err != nil {
		return nil, err
	}
	ok = true
	return db, nil
}

// startWriter starts the group-commit writer.
func (db *DB) startWriter() error {
	if err := db.prepareWriter(); err != nil {
		return err
	}
	db.queue = make(chan *appendReq, queueSize)
	db.writerDone = make(chan struct{})
	go db.writer()
	return nil
}

// OpenReadOnly opens an existing store for reading only, as the operator
// CLI does for verify, tail and export: no migrations run, and the
// connection is opened with mode=ro and query_only, so nothing written
// through it can reach the file. A missing file is an error wrapping
// ErrNotFound and fs.ErrNotExist; a file that is not an Airlock store, or
// was migrated by a newer program (ErrSchemaTooNew), is refused.
func OpenReadOnly(path string) (*DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: resolving %q: %w", path, err)
	}
	st, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("store: no store at %q: %w: %w", abs, ErrNotFound, err)
	}
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("store: %q is not a regular file", abs)
	}
	o, _ := (*Options)(nil).withDefaults()
	db := &DB{path: abs, opts: o, d: sqliteDialect}
	ok := false
	defer func() {
		if !ok {
			db.closeAll()
		}
	}()
	if db.r, err = openPool(abs, "ro", o.BusyTimeout, "", []string{"query_only(1)"}); err != nil {
		return nil, err
	}
	if _, err := db.schemaVersion(context.Background(), db.r); err != nil {
		return nil, err
	}
	if err := db.kill.open(db.r, false, false); err != nil {
		return nil, err
	}
	ok = true
	return db, nil
}

// openPool opens a connection pool on the file with the given SQLite open
// mode (rwc, rw or ro), busy timeout, BEGIN mode and pragmas, and checks that
// a connection really opens.
func openPool(abs, mode string, busy time.Duration, txlock string, pragmas []string) (*sql.DB, error) {
	q := url.Values{}
	q.Set("mode", mode)
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(busy.Milliseconds(), 10)+")")
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	if txlock != "" {
		q.Set("_txlock", txlock)
	}
	// A file: URI, so SQLite sees mode=; the path is escaped so a name
	// holding '?', '#' or '%' cannot smuggle in URI parameters.
	dsn := (&url.URL{Scheme: "file", Path: abs, RawQuery: q.Encode()}).String()
	p, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: opening %q: %w", abs, err)
	}
	if err := p.Ping(); err != nil {
		p.Close()
		return nil, fmt.Errorf("store: opening %q: %w", abs, err)
	}
	return p, nil
}

// schemaVersion returns the file's migration version, refusing a file that
// has none (not an Airlock store) or one newer than this program knows.
func (db *DB) schemaVersion(ctx context.Context, q querier) (int64, error) {
	var n int64
	if err := q.QueryRowContext(ctx, db.d.tableExists).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: reading schema: %w", err)
	}
	if n == 0 {
		return 0, errors.New("store: not an Airlock store (no schema_migrations table)")
	}
	var v int64
	if err := q.QueryRowContext(ctx, sqlSchemaVersion).Scan(&v); err != nil {
		return 0, fmt.Errorf("store: reading schema version: %w", err)
	}
	if latest := db.d.migrations[len(db.d.migrations)-1].version; v > latest {
		return v, fmt.Errorf("store: file is at schema version %d, this program knows up to %d: %w", v, latest, ErrSchemaTooNew)
	}
	if v < 1 {
		return v, errors.New("store: not an Airlock store (no migrations applied)")
	}
	return v, nil
}

// compactRowsVersion is the migration that changed how audit records are
// stored (5); a read-only handle, which migrates nothing, cannot read the
// records of a file from before it (the rest of the file it can).
const compactRowsVersion = 6

// auditReadable refuses, on a read-only handle, to read audit records
// from a file not yet converted: asked every time, as hasContexts does,
// since a server of this version may convert it while the handle is open.
func (db *DB) auditReadable(ctx context.Context, op string) error {
	if db.isClosed() {
		return fmt.Errorf("store: %s: %w", op, ErrClosed)
	}
	if db.w != nil {
		return nil
	}
	var v int64
	if err := db.r.QueryRowContext(ctx, sqlSchemaVersion).Scan(&v); err != nil {
		return fmt.Errorf("store: %s: reading schema version: %w", op, err)
	}
	if v < compactRowsVersion {
		return fmt.Errorf("store: %s: the store is at schema version %d, from an older Airlock; start `airlock serve` with this version once to convert it: %w", op, v, ErrSchemaTooOld)
	}
	return nil
}

// querier is what *sql.DB, *sql.Conn and *sql.Tx share for one-row reads.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// migrate applies the missing migrations, each in its own BEGIN IMMEDIATE
// transaction (on PostgreSQL: holding the migrate advisory lock) that
// re-reads the version first, so two processes opening a new store at
// once apply each step exactly once.
func (db *DB) migrate() error {
	ctx := context.Background()
	if err := db.createMigrationsTable(ctx); err != nil {
		return err
	}
	ms := db.d.migrations
	latest := ms[len(ms)-1].version
	var before int64
	if err := db.w.QueryRowContext(ctx, sqlSchemaVersion).Scan(&before); err != nil {
		return fmt.Errorf("store: reading schema version: %w", err)
	}
	dropped := false
	for _, m := range ms {
		if err := db.applyMigration(ctx, m, latest); err != nil {
			return err
		}
		dropped = dropped || (m.version > before && len(m.after) > 0)
	}
	// A migration that dropped a table (5: the version-4 audit_log) left
	// its pages free in the file: give them back, once. (PostgreSQL's
	// autovacuum does that on its own.)
	if dropped && !db.d.advisory {
		if _, err := db.w.ExecContext(ctx, `VACUUM`); err != nil {
			return fmt.Errorf("store: vacuum after migrating: %w", err)
		}
	}
	return nil
}

// createMigrationsTable runs CREATE TABLE IF NOT EXISTS under the migrate
// lock: on PostgreSQL two concurrent IF NOT EXISTS can still collide.
func (db *DB) createMigrationsTable(ctx context.Context) error {
	return db.inTx(ctx, "creating schema_migrations", txOpts{locks: []string{lockMigrate}}, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, sqlCreateMigrations); err != nil {
			return fmt.Errorf("store: creating schema_migrations: %w", err)
		}
		return nil
	})
}

func (db *DB) applyMigration(ctx context.Context, m migration, latest int64) error {
	what := fmt.Sprintf("migration %d", m.version)
	return db.inTx(ctx, what, txOpts{locks: []string{lockMigrate}}, func(tx *sql.Tx) error {
		var cur int64
		if err := tx.QueryRowContext(ctx, sqlSchemaVersion).Scan(&cur); err != nil {
			return fmt.Errorf("store: reading schema version: %w", err)
		}
		if cur > latest {
			return fmt.Errorf("store: file is at schema version %d, this program knows up to %d: %w", cur, latest, ErrSchemaTooNew)
		}
		if cur >= m.version {
			return errRollback
		}
		if cur != m.version-1 {
			return fmt.Errorf("store: schema version %d cannot take migration %d", cur, m.version)
		}
		for _, s := range m.stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("store: migration %d (%s): %w", m.version, m.name, err)
			}
		}
		if m.convert != nil {
			if err := m.convert(ctx, tx, db.d); err != nil {
				return fmt.Errorf("store: migration %d (%s): %w", m.version, m.name, err)
			}
		}
		for _, s := range m.after {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("store: migration %d (%s): %w", m.version, m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, sqlRecordMigration, m.version, m.name, formatTime(time.Now())); err != nil {
			return fmt.Errorf("store: recording migration %d: %w", m.version, err)
		}
		return nil
	})
}

// Path returns the absolute path of the store file, or for PostgreSQL
// the DSN without its password.
func (db *DB) Path() string { return db.path }

// Backend names the engine: "sqlite" or "postgres".
func (db *DB) Backend() string { return db.d.name }

// Close stops accepting appends, waits for the queued ones to be committed
// (or fail), and closes the file. Calling it again returns nil.
func (db *DB) Close() error {
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return nil
	}
	db.closed = true
	if db.queue != nil {
		close(db.queue)
	}
	db.mu.Unlock()
	if db.writerDone != nil {
		<-db.writerDone
	}
	return db.closeAll()
}

func (db *DB) closeAll() error {
	var errs []error
	errs = append(errs, db.kill.close(), db.reads.close(), db.writes.close())
	errs = append(errs, db.ckpt.close())
	if db.r != nil {
		errs = append(errs, db.r.Close())
	}
	if db.w != nil {
		errs = append(errs, db.w.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: closing: %w", err)
	}
	return nil
}

// isClosed reports whether Close has been called.
func (db *DB) isClosed() bool {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return db.closed
}
