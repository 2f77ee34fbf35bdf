package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/declarations/declarationstest"
	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// TestAppendCallRefusedMoveLeavesTheBatch: two calls' records share one
// group commit, each ending a declaration's execution (AppendCall). One
// move is refused — its declaration already ended — and only that call
// leaves the batch: nothing of it is written and it gets ErrMoveRefused
// (wrapping declarations.ErrState), while the other's record, label and
// move commit together.
func TestAppendCallRefusedMoveLeavesTheBatch(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	db := openAt(t, path, nil)
	m := declarations.NewManager(db.Declarations(), nil)
	run := func() *declarations.Declaration {
		d, err := m.NewExecuting("ctx-1", "alice", declarationstest.FetchNeed(), "rule:low-risk", "")
		if err == nil {
			err = db.Declarations().Create(ctx, d)
		}
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	ok, stale := run(), run()
	okMove, _, err := m.FinishLater(ok, declarationstest.Result, nil)
	if err != nil {
		t.Fatal(err)
	}
	staleMove, _, err := m.FinishLater(stale, declarationstest.Result, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Finish(ctx, stale.ID, nil, errors.New("ended elsewhere")); err != nil {
		t.Fatal(err)
	}

	raw := RawOpen(t, path)
	lock := HoldWriteLock(t, raw)
	gathered := gatheredBatches(db)
	first := make(chan error, 1)
	go func() { first <- db.Append(ctx, &audit.Record{Outcome: audit.OutcomeOK, Reason: "first"}) }()
	if n := <-gathered; n != 1 { // the writer holds "first" alone, waiting for the lock
		t.Fatalf("first batch of %d", n)
	}
	label := &Labels{MaxBytes: 1 << 20, List: []*ContentLabel{{ContextID: "ctx-1", Source: "att_1", Kind: "comm.fetch",
		Integrity: IntegrityUntrusted, Text: "the fetched page", CreatedAt: time.Now()}}}
	okDone, staleDone := make(chan error, 1), make(chan error, 1)
	go func() {
		okDone <- db.AppendCall(ctx, &audit.Record{Outcome: audit.OutcomeOK, Reason: "ok"}, label, okMove)
	}()
	go func() {
		staleDone <- db.AppendCall(ctx, &audit.Record{Outcome: audit.OutcomeOK, Reason: "stale"}, nil, staleMove)
	}()
	deadline := time.Now().Add(time.Minute) // a hang guard, not a verdict
	for len(db.queue) != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("queue length %d, want 2", len(db.queue))
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := lock.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	lock.Close()
	if err := <-first; err != nil {
		t.Fatalf("first: %v", err)
	}
	if n := <-gathered; n != 2 {
		t.Fatalf("the two calls were gathered in batches of %d, want one of 2", n)
	}
	if err := <-okDone; err != nil {
		t.Fatalf("the call whose move applies: %v", err)
	}
	if err := <-staleDone; !errors.Is(err, ErrMoveRefused) || !errors.Is(err, declarations.ErrState) {
		t.Fatalf("the call whose move is refused: %v, want ErrMoveRefused and ErrState", err)
	}
	if d := declarationstest.WantState(t, db.Declarations(), ok.ID, declarations.StateExecuted); d.Result == nil {
		t.Fatalf("executed without its result: %+v", d)
	}
	declarationstest.WantState(t, db.Declarations(), stale.ID, declarations.StateFailed)
	res, err := db.Verify(ctx)
	if err != nil || !res.OK || res.Records != 2 {
		t.Fatalf("Verify = %+v, %v; want OK with 2 records (first, ok)", res, err)
	}
	p, err := db.ContextProvenance(ctx, "ctx-1")
	if err != nil || len(p.Content) != 1 || p.Content[0].Source != "att_1" {
		t.Fatalf("labels of the context: %+v, %v; want the ok call's one", p, err)
	}
}
