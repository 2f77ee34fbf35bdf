package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/airlock-dev/airlock/declarations"
)

// DeclarationStore is the [declarations.Store] kept in the store's file,
// next to the audit trail, so that a declaration, its approval and the
// audit of its execution live and are backed up together. Get it from
// [DB.Declarations]; it is a view of its DB and is valid until the DB is
// closed.
//
// The contract is the one documented on [declarations.Store] and checked by
// declarationstest.StoreConformance (TestDeclarationsConformance). What this
// implementation adds:
//
//   - Durable before return. Create and Transition return nil only after
//     their transaction has committed with synchronous=FULL, like
//     [DB.Append]; a failed commit is an error wrapping [ErrUnavailable],
//     and nothing was written.
//   - Single use across processes. Transition reads the declaration and
//     writes its new state inside one BEGIN IMMEDIATE transaction, which
//     holds SQLite's write lock from the read to the commit: of a server
//     that begins an execution and an operator CLI that expires the same
//     approval from another process, exactly one moves it
//     (TestDeclarationsTransitionAcrossHandles).
//   - Read-only handles. Through a DB from [OpenReadOnly], Get and List
//     work and Create and Transition fail with [ErrReadOnly] before
//     touching anything (TestDeclarationsReadOnly). A read-only handle on a
//     file no program has migrated to declarations yet lists none.
//   - Times are stored in UTC to the microsecond: a time with nanoseconds
//     or another location comes back truncated and in UTC, which is what
//     the Manager writes anyway.
//
// Errors: a missing declaration wraps [declarations.ErrNotFound], a taken
// ID [declarations.ErrExists], a state not in from [declarations.ErrState];
// a declaration that could not be read back exactly (an empty ID, text
// that is not UTF-8 or holds NUL, a time outside years 1 to 9999) is
// refused before any write with a *[declarations.FieldError] wrapping
// [declarations.ErrInvalid] (FuzzDeclarationRoundTrip).
//
// Limits: mutate runs while the write lock is held, so a slow mutate stalls
// every writer of the file, this process's audit appends included, and
// past the busy timeout other processes' writes fail. Transition never
// retries, so mutate runs at most once.
type DeclarationStore struct {
	db *DB
}

var _ declarations.Store = (*DeclarationStore)(nil)

// declarationsVersion is the migration that created the declarations table.
const declarationsVersion = 2

// Declarations returns the declarations kept in db's file.
func (db *DB) Declarations() *DeclarationStore { return &DeclarationStore{db: db} }

// Create implements [declarations.Store]: it stores d, or fails with
// ErrExists if its ID is taken (by a concurrent Create too: the primary
// key decides).
func (s *DeclarationStore) Create(ctx context.Context, d *declarations.Declaration) error {
	if err := s.writable("create declaration"); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if d == nil {
		return &declarations.FieldError{Field: "id", Reason: "required"}
	}
	args, err := declArgs(d, time.Now())
	if err != nil {
		return err
	}
	if err := insertOnce(ctx, s.db.autocommit(sqlInsertDeclaration), "creating declaration "+d.ID, sqlInsertDeclaration, args,
		fmt.Errorf("store: declaration %s: %w", d.ID, declarations.ErrExists)); err != nil {
		return err
	}
	return nil
}

// Get implements [declarations.Store]. It reads through the read pool, so
// it works on a read-only handle and sees every committed write, from this
// process or another.
func (s *DeclarationStore) Get(ctx context.Context, id string) (*declarations.Declaration, error) {
	if err := s.readable(ctx, "get declaration"); err != nil {
		return nil, err
	}
	if ok, err := s.hasTable(ctx); err != nil || !ok {
		return nil, notFoundOr(id, err)
	}
	d, err := scanDeclaration(s.db.r.QueryRowContext(ctx, sqlGetDeclaration, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFoundOr(id, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get declaration: %w", err)
	}
	return d, nil
}

// Transition implements [declarations.Store] as a compare-and-swap in one
// BEGIN IMMEDIATE transaction: read the row, check its state against from,
// run mutate on the decoded copy, write the row back where the state is
// still the one read, commit. Nothing is written unless all of that
// succeeds. The returned declaration is what was stored, as Get would
// return it.
func (s *DeclarationStore) Transition(ctx context.Context, id string, from []declarations.State, to declarations.State, mutate func(*declarations.Declaration) error) (*declarations.Declaration, error) {
	if err := s.writable("transition declaration"); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// In one write transaction (BEGIN IMMEDIATE, tx.go): the write lock
	// is taken before the read in swap, not at its UPDATE, so no other
	// connection, in this process or another, can commit in between
	// (TestDeclarationsTransitionAcrossHandles fails without it).
	var next, stored *declarations.Declaration
	err := s.db.inTx(ctx, "transition of declaration "+id, txOpts{}, func(tx *sql.Tx) error {
		d, err := s.db.swap(ctx, sqlTx{s.db, tx}, id, from, to, mutate)
		if err != nil {
			stored = d // with ErrState, the declaration as stored
			return err
		}
		next = d
		return nil
	})
	if err != nil {
		return stored, err
	}
	normalizeDeclaration(next)
	return next, nil
}

// swap is Transition's work inside the write transaction tx. It returns
// the declaration to commit, or an error after which tx must be rolled
// back: with ErrState it also returns the declaration as stored, and
// mutate's error comes back unchanged.
// The row is read with the dialect's getDeclForUpdate: on PostgreSQL the
// FOR UPDATE read, which makes a second instance's transition of the same
// declaration wait for this one's commit and then see its state
// (TestPostgresCollectOnce). On SQLite both statements are the writer's,
// prepared once (stmtcache.go): a need's execution ends in the audit
// commit (callmove.go).
func (db *DB) swap(ctx context.Context, t wtx, id string, from []declarations.State, to declarations.State, mutate func(*declarations.Declaration) error) (*declarations.Declaration, error) {
	what := "transition of declaration " + id
	row, err := scanDeclRow(t.row(ctx, db.d.getDeclForUpdate, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFoundOr(id, nil)
	}
	if err != nil {
		return nil, writeError(ctx, what, err)
	}
	cur, err := row.decode()
	if err != nil {
		return nil, fmt.Errorf("store: transition: %w", err)
	}
	if !slices.Contains(from, cur.State) {
		return cur, fmt.Errorf("store: declaration %s is %s: %w", id, cur.State, declarations.ErrState)
	}
	next := cur.Clone()
	if mutate != nil {
		if err := mutate(next); err != nil {
			return nil, err
		}
		// mutate may have kept a pointer to what it was given.
		next = next.Clone()
	}
	next.ID, next.State = id, to
	args, err := declArgs(next, time.Now())
	if err != nil {
		return nil, err
	}
	n, err := t.exec(ctx, sqlUpdateDeclaration, append(args, string(cur.State))...)
	if err != nil {
		return nil, writeError(ctx, what, err)
	}
	if n != 1 {
		// Unreachable while the write lock is held; refuse rather than
		// report a move that may not have happened.
		return nil, writeError(ctx, what, fmt.Errorf("updated %d rows", n))
	}
	return next, nil
}

// List implements [declarations.Store]. Like Get it reads through the read
// pool; the rows come from one statement, so one consistent snapshot.
func (s *DeclarationStore) List(ctx context.Context, f declarations.Filter) ([]*declarations.Declaration, error) {
	if err := s.readable(ctx, "list declarations"); err != nil {
		return nil, err
	}
	ok, err := s.hasTable(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: list declarations: %w", err)
	}
	if !ok {
		return nil, nil
	}
	states := make([]string, len(f.States))
	for i, st := range f.States {
		states[i] = string(st)
	}
	q, args := sqlListDeclarations(f.ContextID, states, f.Limit)
	out, err := queryAll(ctx, s.db.r, scanDeclaration, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list declarations: %w", err)
	}
	return out, nil
}

// writable refuses a write through a read-only or closed handle.
func (s *DeclarationStore) writable(op string) error {
	if s.db.w == nil {
		return fmt.Errorf("store: %s: %w", op, ErrReadOnly)
	}
	if s.db.isClosed() {
		return fmt.Errorf("store: %s: %w", op, ErrClosed)
	}
	return nil
}

// readable refuses a read through a closed handle or with a done ctx.
func (s *DeclarationStore) readable(ctx context.Context, op string) error {
	if s.db.isClosed() {
		return fmt.Errorf("store: %s: %w", op, ErrClosed)
	}
	return ctx.Err()
}

// hasTable reports whether the file has the declarations table. A writable
// handle migrated the file when it opened it. A read-only handle runs no
// migrations, and the CLI may open a file the server has not yet upgraded
// (or upgrades while the handle is open), so it asks every time; the
// answer is one row of schema_migrations.
func (s *DeclarationStore) hasTable(ctx context.Context) (bool, error) {
	if s.db.w != nil {
		return true, nil
	}
	var v int64
	if err := s.db.r.QueryRowContext(ctx, sqlSchemaVersion).Scan(&v); err != nil {
		return false, fmt.Errorf("reading schema version: %w", err)
	}
	return v >= declarationsVersion, nil
}

// notFoundOr maps a missing row (or table) to declarations.ErrNotFound and
// wraps any other error.
func notFoundOr(id string, err error) error {
	if err == nil || errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store: declaration %s: %w", id, declarations.ErrNotFound)
	}
	return fmt.Errorf("store: declaration %s: %w", id, err)
}

// writeError wraps the failure of a write. A done ctx is the caller's
// doing and is reported as such; anything else means the store could not
// write (locked past the busy timeout, disk full, broken connection) and
// wraps ErrUnavailable. Either way nothing was committed.
func writeError(ctx context.Context, what string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		err = fmt.Errorf("%w (%w)", ctxErr, err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	return unavailable(what, err)
}

// execer is a pool or a transaction: what insertOnce writes through.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// insertOnce runs an INSERT ... ON CONFLICT DO NOTHING through w and
// returns taken when the row was already there: RowsAffected, not a read
// before the insert, decides, so concurrent inserts of one key race on the
// primary key (declarations, contexts, sessions, used challenges).
func insertOnce(ctx context.Context, w execer, what, query string, args []any, taken error) error {
	res, err := w.ExecContext(ctx, query, args...)
	if err != nil {
		return writeError(ctx, what, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return writeError(ctx, what, err)
	}
	if n == 0 {
		return taken
	}
	return nil
}
