package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/declarations/declarationstest"
	"github.com/airlock-dev/airlock/store"
)

// TestDeclarationsConformance runs the contract every declarations.Store
// must keep, on a fresh file per case.
func TestDeclarationsConformance(t *testing.T) {
	declarationstest.StoreConformance(t, func(t *testing.T) declarations.Store {
		db, _ := openTemp(t, nil)
		return db.Declarations()
	})
}

var declEpoch = time.Date(2026, 3, 4, 5, 6, 7, 891011000, time.UTC)

// testDecl returns a declaration with every field set.
func testDecl(id, session string, state declarations.State) *declarations.Declaration {
	need := declarations.Need{
		Operation:  declarations.OpFetch,
		Parameters: declarations.Parameters{URL: "https://example.com/prices?q=x&y=<z>"},
		Justification: declarations.Justification{
			UserRequest: "prices", MissingKnowledge: "current prices", ExpectedUse: "a table",
		},
	}
	return &declarations.Declaration{
		ID: id, ContextID: session, Principal: "alice", Need: need, Fingerprint: need.Fingerprint(),
		State: state, Decision: declarations.DecisionRequireApproval, RuleID: "r1",
		DecidedBy: "operator:bob", CreatedAt: declEpoch, DecidedAt: declEpoch.Add(time.Second),
		ExpiresAt: declEpoch.Add(time.Hour),
		History: []declarations.Transition{
			{To: declarations.StateDeclared, At: declEpoch, By: "agent:alice"},
			{From: declarations.StateDeclared, To: state, At: declEpoch.Add(time.Second), By: "operator:bob"},
		},
	}
}

func mustCreate(t *testing.T, st declarations.Store, d *declarations.Declaration) {
	t.Helper()
	if err := st.Create(context.Background(), d); err != nil {
		t.Fatalf("Create(%s): %v", d.ID, err)
	}
}

// mustRefuseWrites checks that st refuses to create a declaration and to
// move the approved d1 on, both with want, without running the
// Transition's mutate, and that d1 stays approved.
func mustRefuseWrites(t *testing.T, st declarations.Store, want error) {
	t.Helper()
	ctx := context.Background()
	if err := st.Create(ctx, testDecl("d2", "s1", declarations.StateDeclared)); !errors.Is(err, want) {
		t.Errorf("Create: %v, want %v", err, want)
	}
	_, err := st.Transition(ctx, "d1", []declarations.State{declarations.StateApproved}, declarations.StateExecuting, func(*declarations.Declaration) error {
		t.Errorf("mutate ran though the write is refused (%v)", want)
		return nil
	})
	if !errors.Is(err, want) {
		t.Errorf("Transition: %v, want %v", err, want)
	}
	mustState(t, st, "d1", declarations.StateApproved)
}

func mustState(t *testing.T, st declarations.Store, id string, want declarations.State) *declarations.Declaration {
	t.Helper()
	d, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	if d.State != want {
		t.Fatalf("%s is %s, want %s", id, d.State, want)
	}
	return d
}

// TestDeclarationsAcrossHandles: what one handle writes, another handle on
// the file (a second process: the server and the operator CLI) reads, and
// declaration writes leave the audit chain whole.
func TestDeclarationsAcrossHandles(t *testing.T) {
	ctx := context.Background()
	a, path := openTemp(t, nil)
	b := openPath(t, path)
	ro := openRO(t, path)
	appendN(t, a, 0, 2)

	want := testDecl("d1", "s1", declarations.StateDeclared)
	mustCreate(t, a.Declarations(), want)
	for name, h := range map[string]*store.DB{"other": b, "read-only": ro} {
		got, err := h.Declarations().Get(ctx, "d1")
		if err != nil {
			t.Fatalf("%s handle: Get: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s handle read\n %+v\nwant %+v", name, got, want)
		}
		list, err := h.Declarations().List(ctx, declarations.Filter{ContextID: "s1"})
		if err != nil || len(list) != 1 || list[0].ID != "d1" {
			t.Errorf("%s handle: List: %v, %v", name, list, err)
		}
	}
	if err := b.Declarations().Create(ctx, testDecl("d1", "s2", declarations.StateApproved)); !errors.Is(err, declarations.ErrExists) {
		t.Errorf("Create of d1 through the other handle: %v, want ErrExists", err)
	}
	if _, err := b.Declarations().Transition(ctx, "d1", []declarations.State{declarations.StateDeclared}, declarations.StateApproved, nil); err != nil {
		t.Fatal(err)
	}
	mustState(t, a.Declarations(), "d1", declarations.StateApproved)
	mustState(t, ro.Declarations(), "d1", declarations.StateApproved)

	appendN(t, b, 2, 2)
	mustVerify(t, a, 4)
}

// TestDeclarationsTransitionAcrossHandles is the single-use guarantee
// across processes: two handles on one file (each with its own writing
// connection, as the server and the operator CLI have) race approved →
// executing on the same declarations; for each exactly one caller wins and
// every other gets ErrState with the declaration as the winner left it.
func TestDeclarationsTransitionAcrossHandles(t *testing.T) {
	ctx := context.Background()
	a, path := openTemp(t, nil)
	b := openPath(t, path)
	stores := []declarations.Store{a.Declarations(), b.Declarations()}
	const rounds, perHandle = 8, 4
	for r := range rounds {
		id := fmt.Sprint("d", r)
		mustCreate(t, stores[r%2], testDecl(id, "s1", declarations.StateApproved))
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			won   []int
			calls int
		)
		start := make(chan struct{})
		for i := range 2 * perHandle {
			st := stores[i%2]
			wg.Go(func() {
				<-start
				got, err := st.Transition(ctx, id, []declarations.State{declarations.StateApproved}, declarations.StateExecuting, func(d *declarations.Declaration) error {
					mu.Lock()
					calls++
					mu.Unlock()
					d.Attempts++
					return nil
				})
				switch {
				case err == nil:
					mu.Lock()
					won = append(won, i)
					mu.Unlock()
				case !errors.Is(err, declarations.ErrState):
					t.Errorf("round %d caller %d: %v, want nil or ErrState", r, i, err)
				case got == nil || got.State != declarations.StateExecuting || got.Attempts != 1:
					t.Errorf("round %d caller %d: ErrState came with %+v, want the executing declaration", r, i, got)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(won) != 1 || calls != 1 {
			t.Fatalf("round %d: winners %v, mutate ran %d times; want exactly one of each", r, won, calls)
		}
		for _, st := range stores {
			if d := mustState(t, st, id, declarations.StateExecuting); d.Attempts != 1 {
				t.Errorf("round %d: attempts %d, want 1", r, d.Attempts)
			}
		}
	}
}

// TestDeclarationsManagerAcrossHandles: the operator approves through one
// handle while the server's Manager, on another, executes; the approval
// is consumed once.
func TestDeclarationsManagerAcrossHandles(t *testing.T) {
	ctx := context.Background()
	srvDB, path := openTemp(t, nil)
	server := declarations.NewManager(srvDB.Declarations(), nil)
	operator := declarations.NewManager(openPath(t, path).Declarations(), nil)
	d, err := server.Declare(ctx, "s1", "alice", testDecl("x", "s1", declarations.StateDeclared).Need,
		declarations.DecisionRequireApproval, "r1", "needs a person")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := operator.Approve(ctx, d.ID, "operator:bob", "ok"); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Begin(ctx, d.ID, "s1"); err != nil {
		t.Fatalf("Begin after the other handle approved: %v", err)
	}
	if _, err := operator.Begin(ctx, d.ID, "s1"); !errors.Is(err, declarations.ErrAlreadyConsumed) {
		t.Errorf("second Begin through the other handle: %v, want ErrAlreadyConsumed", err)
	}
}

// TestDeclarationsReadOnly: a read-only handle (the CLI's approvals list)
// reads declarations and refuses to write them, before running mutate.
func TestDeclarationsReadOnly(t *testing.T) {
	ctx := context.Background()
	rw, path := openTemp(t, nil)
	mustCreate(t, rw.Declarations(), testDecl("d1", "s1", declarations.StateApproved))
	st := openRO(t, path).Declarations()

	mustRefuseWrites(t, st, store.ErrReadOnly)
	if list, err := st.List(ctx, declarations.Filter{}); err != nil || len(list) != 1 {
		t.Errorf("List: %v, %v; want d1 alone", list, err)
	}
	if _, err := st.Get(ctx, "d2"); !errors.Is(err, declarations.ErrNotFound) {
		t.Errorf("Get(d2): %v, want ErrNotFound", err)
	}
}

// TestDeclarationsRefused: a declaration that could not be read back
// exactly is refused with ErrInvalid before anything is written, by
// Create and by a Transition whose mutate produced it.
func TestDeclarationsRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		field string
		edit  func(d *declarations.Declaration)
	}{
		{"empty id", "id", func(d *declarations.Declaration) { d.ID = "" }},
		{"unknown state", "state", func(d *declarations.Declaration) { d.State = "approvedish" }},
		{"invalid UTF-8", "reason", func(d *declarations.Declaration) { d.Reason = "ok\xff" }},
		{"NUL in the need", "need.justification.expected_use", func(d *declarations.Declaration) { d.Need.Justification.ExpectedUse = "a\x00b" }},
		{"NUL in history", "history[1].by", func(d *declarations.Declaration) { d.History[1].By = "x\x00" }},
		{"invalid UTF-8 in result", "result.attribution_id", func(d *declarations.Declaration) {
			d.Result = &declarations.ResultRef{AttributionID: "\xc3"}
		}},
		{"year 10000", "expires_at", func(d *declarations.Declaration) { d.ExpiresAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"year 0 in history", "history[0].at", func(d *declarations.Declaration) { d.History[0].At = time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := openTemp(t, nil)
			st := db.Declarations()
			d := testDecl("d1", "s1", declarations.StateDeclared)
			c.edit(d)
			wantInvalid(t, "Create", st.Create(ctx, d), c.field)
			if list, _ := st.List(ctx, declarations.Filter{}); len(list) != 0 {
				t.Errorf("a refused Create stored %d declarations", len(list))
			}
			if c.field == "id" || c.field == "state" {
				return // Transition sets both itself
			}
			mustCreate(t, st, testDecl("d1", "s1", declarations.StateDeclared))
			_, err := st.Transition(ctx, "d1", []declarations.State{declarations.StateDeclared}, declarations.StateApproved, func(x *declarations.Declaration) error {
				c.edit(x)
				return nil
			})
			wantInvalid(t, "Transition", err, c.field)
			mustState(t, st, "d1", declarations.StateDeclared)
		})
	}
	db, _ := openTemp(t, nil)
	_, err := db.Declarations().Transition(context.Background(), "d1", nil, "bogus", nil)
	if !errors.Is(err, declarations.ErrNotFound) {
		t.Errorf("Transition of a missing declaration: %v, want ErrNotFound", err)
	}
	mustCreate(t, db.Declarations(), testDecl("d1", "s1", declarations.StateDeclared))
	_, err = db.Declarations().Transition(context.Background(), "d1", []declarations.State{declarations.StateDeclared}, "bogus", nil)
	wantInvalid(t, "Transition to an unknown state", err, "state")
}

func wantInvalid(t *testing.T, what string, err error, field string) {
	t.Helper()
	var fe *declarations.FieldError
	if !errors.Is(err, declarations.ErrInvalid) || !errors.As(err, &fe) || fe.Field != field {
		t.Errorf("%s: %v, want ErrInvalid on %s", what, err, field)
	}
}

// TestDeclarationsRow checks the stored form: times in UTC to the
// microsecond whatever the location and precision given, NULL for a zero
// time, the need column holding exactly the bytes its fingerprint hashes.
func TestDeclarationsRow(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t, nil)
	st := db.Declarations()
	d := testDecl("d1", "s1", declarations.StateDeclared)
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	d.CreatedAt = time.Date(2026, 1, 2, 8, 34, 5, 123456789, zone)
	d.ExpiresAt, d.ExecutedAt = time.Time{}, time.Time{}
	mustCreate(t, st, d)
	got, err := st.Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC); got.CreatedAt != want {
		t.Errorf("CreatedAt came back as %v, want %v", got.CreatedAt, want)
	}
	if !got.ExpiresAt.IsZero() || !got.ExecutedAt.IsZero() {
		t.Errorf("zero times came back as %v, %v", got.ExpiresAt, got.ExecutedAt)
	}

	var created, need string
	var nulls int
	err = store.RawOpen(t, path).QueryRow(`SELECT created_at, need,
		(expires_at IS NULL) + (executed_at IS NULL) + (decided_at IS NULL)
		FROM declarations WHERE id = 'd1'`).Scan(&created, &need, &nulls)
	if err != nil {
		t.Fatal(err)
	}
	if created != "2026-01-02T03:04:05.123456Z" {
		t.Errorf("created_at stored as %q", created)
	}
	if nulls != 2 {
		t.Errorf("%d NULL times, want 2 (expires_at, executed_at)", nulls)
	}
	if sum := sha256.Sum256([]byte(need)); hex.EncodeToString(sum[:]) != d.Fingerprint {
		t.Errorf("need column %q does not hash to the fingerprint", need)
	}
}

// TestDeclarationsUnavailable: when another process holds the write lock
// past the busy timeout, writes fail with ErrUnavailable and mutate does
// not run; reads go on.
func TestDeclarationsUnavailable(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t, &store.Options{BusyTimeout: 50 * time.Millisecond})
	st := db.Declarations()
	mustCreate(t, st, testDecl("d1", "s1", declarations.StateApproved))

	lock := store.HoldWriteLock(t, store.RawOpen(t, path))
	mustRefuseWrites(t, st, store.ErrUnavailable)
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Transition(ctx, "d1", []declarations.State{declarations.StateApproved}, declarations.StateExecuting, nil); err != nil {
		t.Errorf("Transition once the lock is released: %v", err)
	}
}

// TestDeclarationsClosed: every method of a closed store says so.
func TestDeclarationsClosed(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t, nil)
	st := db.Declarations()
	mustCreate(t, st, testDecl("d1", "s1", declarations.StateApproved))
	db.Close()
	_, getErr := st.Get(ctx, "d1")
	_, listErr := st.List(ctx, declarations.Filter{})
	_, trErr := st.Transition(ctx, "d1", []declarations.State{declarations.StateApproved}, declarations.StateExecuting, nil)
	for name, err := range map[string]error{
		"Create":     st.Create(ctx, testDecl("d2", "s1", declarations.StateDeclared)),
		"Get":        getErr,
		"List":       listErr,
		"Transition": trErr,
	} {
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}
