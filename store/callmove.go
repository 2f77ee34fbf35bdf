package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// A declaration's writes in the call's audit commits (issue 23). An
// answered need was a started record, the declaration, its Begin, its
// Finish and the call's record: five durable commits. Now two: before the
// side effect [DB.AppendStart] stores the declaration, created executing
// (declarations.Manager.NewExecuting), with the started record; after it
// [DB.AppendCall] takes the end
// (declarations.Manager.FinishLater) to the writer with the record and
// its labels, and the writer stores it in the record's transaction: the
// end of the execution, the content the agent is handed and the audit of
// the call are durable together, before the answer leaves, in one
// commit shared by the group.
//
// The move is a compare-and-swap as [DeclarationStore.Transition] makes
// it (swap, in the batch's write transaction; on PostgreSQL its row is
// read FOR UPDATE before the chain head is). A move the swap refuses (the
// declaration is no longer in the state the move starts from, or is
// gone) has written nothing, and only its own request leaves the batch:
// its record and labels are not written, AppendCall returns an error
// wrapping [ErrMoveRefused] and the cause, and the batch's other records
// commit — one call's stale declaration cannot fail another's audit
// (TestAppendCallRefusedMoveLeavesTheBatch). A store failure fails the
// whole batch, as for any append.

// ErrMoveRefused: AppendCall's declaration move was refused, so nothing
// of the call was written; the error also wraps the declarations error
// (declarations.ErrState, ErrNotFound).
var ErrMoveRefused = errors.New("declaration move refused")

// AppendCall is [DB.AppendLabelled] for a call that also ends a
// declaration's execution: move (nil: none) is stored in the same
// transaction as rec and labels. All three are durable when it returns
// nil; on an error none of them is in the store.
func (db *DB) AppendCall(ctx context.Context, rec *audit.Record, labels *Labels, move *declarations.Move) error {
	labels, err := checkLabels(labels)
	if err != nil {
		return err
	}
	return db.appendReq(ctx, rec, labels, move, nil)
}

// AppendStart is [DB.Append] for a call's started record (the record a
// consequential call writes before it executes) that also stores create,
// the declaration the call is about to execute, created executing
// (declarations.Manager.NewExecuting): both are durable when it returns
// nil, in one commit, before the side effect; on an error neither is in
// the store. A declaration the store refuses (its id taken, a field it
// cannot keep) leaves the request out of its batch, as a refused move
// does: the error wraps ErrMoveRefused and the cause.
func (db *DB) AppendStart(ctx context.Context, rec *audit.Record, create *declarations.Declaration) error {
	return db.appendReq(ctx, rec, nil, nil, create)
}

// movesInTx stores the moves of reqs in tx. A refused move sets its
// request's refused (and leaves it out of what follows); a store failure
// is returned, wrapping ErrUnavailable, and fails the batch.
func (db *DB) movesInTx(ctx context.Context, t wtx, reqs []*appendReq) error {
	for _, req := range reqs {
		req.refused = nil
		var (
			id  string
			err error
		)
		switch {
		case req.create != nil:
			id, err = req.create.ID, db.createInTx(ctx, t, req.create)
		case req.move != nil:
			id = req.move.ID()
			_, err = req.move.Apply(func(id string, from []declarations.State, to declarations.State, mutate func(*declarations.Declaration) error) (*declarations.Declaration, error) {
				return db.swap(ctx, t, id, from, to, mutate)
			})
		}
		switch {
		case err == nil:
		case errors.Is(err, ErrUnavailable):
			return err
		default:
			req.refused = fmt.Errorf("store: declaration %s: %w: %w", id, ErrMoveRefused, err)
		}
	}
	return nil
}

// createInTx inserts d in tx, as [DeclarationStore.Create] does: a taken
// id is declarations.ErrExists, and the insert writes nothing then.
func (db *DB) createInTx(ctx context.Context, t wtx, d *declarations.Declaration) error {
	args, err := declArgs(d, time.Now())
	if err != nil {
		return err
	}
	return insertOnce(ctx, wtxExecer{t}, "creating declaration "+d.ID, sqlInsertDeclaration, args,
		fmt.Errorf("store: declaration %s: %w", d.ID, declarations.ErrExists))
}

// txExecer runs a statement in tx through the writer's prepared
// statement when there is one (execW).
type txExecer struct {
	db *DB
	tx *sql.Tx
}

func (e txExecer) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return e.db.execW(ctx, e.tx, query, args...)
}

func (e txExecer) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return e.db.queryW(ctx, e.tx, query, args...)
}
