package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/declarations/declarationstest"
	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/store"
	"github.com/airlock-dev/airlock/store/pgtest"
)

func TestAppendCallMove(t *testing.T) {
	db, _ := openTemp(t, nil)
	appendCallMove(t, db)
}

func TestPostgresAppendCallMove(t *testing.T) {
	appendCallMove(t, openPG(t, pgtest.DSN(t), nil))
}

// appendCallMove: AppendStart stores a declaration created executing with
// the call's started record, AppendCall its end with the call's record,
// each both or neither; a refused creation (the id taken) or move (the
// declaration already ended) writes nothing of its call, and the handle appends on as before — on
// PostgreSQL too, where a failed statement would poison its transaction.
func appendCallMove(t *testing.T, db *store.DB) {
	ctx := context.Background()
	m := declarations.NewManager(db.Declarations(), nil)
	d, err := m.NewExecuting("ctx-1", "alice", declarationstest.FetchNeed(), "rule:low-risk", "")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AppendStart(ctx, &audit.Record{Outcome: audit.OutcomeStarted, Reason: "started"}, d); err != nil {
		t.Fatal(err)
	}
	declarationstest.WantState(t, db.Declarations(), d.ID, declarations.StateExecuting)
	err = db.AppendStart(ctx, &audit.Record{Outcome: audit.OutcomeStarted, Reason: "started again"}, d)
	if !errors.Is(err, store.ErrMoveRefused) || !errors.Is(err, declarations.ErrExists) {
		t.Fatalf("the same declaration created again: %v, want ErrMoveRefused and ErrExists", err)
	}
	mv, preview, err := m.FinishLater(d, declarationstest.Result, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AppendCall(ctx, &audit.Record{Outcome: audit.OutcomeOK, Reason: "ended"}, nil, mv); err != nil {
		t.Fatal(err)
	}
	got := declarationstest.WantState(t, db.Declarations(), d.ID, declarations.StateExecuted)
	if got.Result == nil || *got.Result != *preview.Result || len(got.History) != len(preview.History) {
		t.Fatalf("stored %s\npreview %s", declarationstest.JSON(got), declarationstest.JSON(preview))
	}
	err = db.AppendCall(ctx, &audit.Record{Outcome: audit.OutcomeOK, Reason: "again"}, nil, mv)
	if !errors.Is(err, store.ErrMoveRefused) || !errors.Is(err, declarations.ErrState) {
		t.Fatalf("the same end again: %v, want ErrMoveRefused and ErrState", err)
	}
	if err := db.Append(ctx, &audit.Record{Outcome: audit.OutcomeOK, Reason: "after"}); err != nil {
		t.Fatalf("an append after a refused move: %v", err)
	}
	res, err := db.Verify(ctx)
	if err != nil || !res.OK || res.Records != 3 {
		t.Fatalf("Verify = %+v, %v; want OK with 3 records (started, ended, after)", res, err)
	}
}
