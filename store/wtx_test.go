package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/store/pgtest"
)

// TestWriteTx: a write transaction whose statements wait to be sent
// together (wtx.go, pipetx.go) means what one that sends each at once
// means, on both engines: what the callback wrote is committed when it
// returns nil and not otherwise; a statement reads what the statements
// queued before it wrote; a queued statement that fails, or a guarded one
// whose guard no longer holds, fails the transaction and commits nothing
// — even when, on PostgreSQL, it went out in the same round trip as the
// commit — and the connection serves the next transaction.
func TestWriteTx(t *testing.T) {
	ctx := context.Background()
	mine := errors.New("mine")
	const key = "wtx-test"
	set := func(v string) laterStmt {
		return laterStmt{what: "setting", query: sqlUpsertSetting, args: []any{key, v, "by", "why", "at"}, want: -1}
	}
	// A guard that cannot hold: the head is never at seq -5.
	stale := laterStmt{what: "updating chain head", query: sqlUpdateHeadFrom, args: []any{int64(1), "h", int64(-5)},
		want: 1, moved: errHeadMoved}
	bad := laterStmt{what: "a bad statement", query: `UPDATE no_such_table SET x = 1`, want: -1}
	for name, open := range openOn {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			for _, c := range []struct {
				name    string
				steps   []laterStmt
				ret     error
				wantErr error // errors.Is; nil: none
				failed  bool  // an error of the transaction's own
				stored  bool
			}{
				{"commit", []laterStmt{set("v")}, nil, nil, false, true},
				{"rollback", []laterStmt{set("v")}, errRollback, nil, false, false},
				{"callback's error", []laterStmt{set("v")}, mine, mine, false, false},
				{"stale guard sent with the commit", []laterStmt{set("v"), stale}, nil, errHeadMoved, true, false},
				{"stale guard before another statement", []laterStmt{stale, set("v")}, nil, errHeadMoved, true, false},
				{"failing statement", []laterStmt{set("v"), bad}, nil, nil, true, false},
			} {
				err := db.inWriteTx(ctx, "test", txOpts{chain: true}, func(w wtx) error {
					for _, s := range c.steps {
						if err := w.later(ctx, s); err != nil {
							return err // SQLite runs it at once
						}
					}
					return c.ret
				})
				switch {
				case c.wantErr != nil && !errors.Is(err, c.wantErr):
					t.Errorf("%s: %v, want %v", c.name, err, c.wantErr)
				case c.wantErr == nil && c.failed != (err != nil):
					t.Errorf("%s: error %v, want one: %v", c.name, err, c.failed)
				}
				var v string
				err = db.r.QueryRowContext(ctx, sqlGetSetting, key).Scan(&v)
				if stored := err == nil; stored != c.stored {
					t.Errorf("%s: stored %v (%v), want %v", c.name, stored, err, c.stored)
				}
				if _, err := db.w.ExecContext(ctx, `DELETE FROM settings WHERE name = $1`, key); err != nil {
					t.Fatal(err)
				}
			}
			// Read your own queued writes, and the count of rows affected.
			err := db.inWriteTx(ctx, "test", txOpts{}, func(w wtx) error {
				if err := w.later(ctx, set("first")); err != nil {
					return err
				}
				var v string
				if err := w.row(ctx, sqlGetSetting, key).Scan(&v); err != nil || v != "first" {
					t.Errorf("read in the transaction: %q, %v; want the queued write", v, err)
				}
				n, err := w.exec(ctx, `DELETE FROM settings WHERE name = $1`, key)
				if err != nil || n != 1 {
					t.Errorf("exec: %d rows, %v; want 1", n, err)
				}
				return errRollback
			})
			if err != nil {
				t.Fatal(err)
			}
			// Every transaction above left its connection usable.
			if err := db.Append(ctx, &audit.Record{Tool: "t", Outcome: audit.OutcomeOK}); err != nil {
				t.Fatalf("append after the failures: %v", err)
			}
			verified(t, db, 1)
		})
	}
}

// TestAppendRoundTrips: on PostgreSQL a batch of one call is two round
// trips — begin and the reads FOR UPDATE (the context's live totals, then
// the chain head); the label, the totals' update, the record, the head's
// update and the commit — with a content label or without. It was eight
// and five, one a statement (issue 27, BENCHMARKS.md session 13).
func TestAppendRoundTrips(t *testing.T) {
	db := openOn["postgres"](t)
	sent := 0
	count := func() { sent++ }
	db.sentHook.Store(&count)
	ctx := context.Background()
	label := func(i int) *Labels {
		return &Labels{MaxBytes: 1 << 20, List: []*ContentLabel{{ContextID: "c", Source: fmt.Sprint(i), Kind: "k",
			Integrity: IntegrityTrusted, Text: strings.Repeat("z", 100)}}}
	}
	rec := func() *audit.Record {
		return &audit.Record{Tool: "read_pool_file", Outcome: audit.OutcomeOK, Principal: "p"}
	}
	// The first of each kind prepares its statements and interns its
	// strings; the second is the steady state.
	for i := range 2 {
		sent = 0
		must(t, db.AppendLabelled(ctx, rec(), label(i)))
	}
	if sent != 2 {
		t.Errorf("a labelled call's batch: %d round trips, want 2", sent)
	}
	for range 2 {
		sent = 0
		must(t, db.Append(ctx, rec()))
	}
	if sent != 2 {
		t.Errorf("a call's batch: %d round trips, want 2", sent)
	}
	verified(t, db, 4)
}

// verified fails t unless db's chain verifies and holds n records.
func verified(t *testing.T, db *DB, n int64) {
	t.Helper()
	if res, err := db.Verify(context.Background()); err != nil || !res.OK || res.Records != n {
		t.Fatalf("verify: %+v, %v; want %d records that verify", res, err, n)
	}
}

// TestNewContextLockOrder: every append locks a context's row before the
// chain head, also a context's first label, whose row the append creates.
// When the head's read went out with the contexts' reads, a missing row
// locked nothing there and was created only after the head was locked:
// an instance that created the row meanwhile (RecordContent, no head) and
// then appended to it held the row and waited for the head, while the
// first waited for the row — PostgreSQL's deadlock detector failed one of
// them (found in review). Here instance A is paused holding the head at
// the send after its first, B records content in the same new context and
// appends to it, and A is let go once B waits on a lock: both must commit.
func TestNewContextLockOrder(t *testing.T) {
	dsn := pgtest.DSN(t)
	ctx := context.Background()
	a, b := openPGAt(t, dsn), openPGAt(t, dsn)
	label := func(c string) *Labels {
		return &Labels{MaxBytes: 1 << 20, List: []*ContentLabel{{ContextID: c, Source: "s", Kind: "k",
			Integrity: IntegrityTrusted, Text: "text"}}}
	}
	rec := func() *audit.Record {
		return &audit.Record{Tool: "read_pool_file", Outcome: audit.OutcomeOK, Principal: "p"}
	}
	must(t, a.AppendLabelled(ctx, rec(), label("c1"))) // its strings known: the head goes with the reads
	var sends atomic.Int32
	paused, release := make(chan struct{}), make(chan struct{})
	hook := func() {
		if sends.Add(1) == 2 {
			close(paused)
			<-release
		}
	}
	a.sentHook.Store(&hook)
	aDone := make(chan error, 1)
	go func() { aDone <- a.AppendLabelled(ctx, rec(), label("c2")) }()
	<-paused // A holds the head
	bDone := make(chan error, 1)
	go func() {
		l := &ContentLabel{ContextID: "c2", Source: "t", Kind: "k", Integrity: IntegrityTrusted, Text: "other"}
		if _, err := b.RecordContent(ctx, l, 1<<20); err != nil {
			bDone <- err
			return
		}
		bDone <- b.AppendLabelled(ctx, rec(), label("c2"))
	}()
	// Let A go once B waits on a lock (the row A holds, or the head).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var waiting int
		must(t, a.r.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&waiting))
		if waiting > 0 {
			break
		}
		if time.Now().After(deadline) { // a hang guard, not the verdict
			t.Fatal("B never waited on a lock")
		}
	}
	close(release)
	if err := <-aDone; err != nil {
		t.Errorf("A: %v", err)
	}
	if err := <-bDone; err != nil {
		t.Errorf("B: %v", err)
	}
	verified(t, a, 3)
}

// openPGAt opens a handle on dsn, closed at the end of the test.
func openPGAt(t *testing.T, dsn string) *DB {
	db, err := OpenPostgres(dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
