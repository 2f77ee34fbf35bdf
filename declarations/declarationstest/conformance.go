// Package declarationstest holds the conformance suite every
// [declarations.Store] must pass and an in-memory Store that passes it (the
// SQLite and PostgreSQL stores run the suite too, and it runs itself
// against mutants with one bug each). It is test code: only _test.go files
// may import it, and the airlock binary never links it
// (TestTestPackagesNotShipped in the module root).
package declarationstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/kit/racetest"
)

// StoreConformance checks that a Store keeps the contract documented on
// [declarations.Store]: exact round trips, no shared memory, compare-and-swap
// transitions that exactly one of many concurrent callers wins, filtered
// and ordered lists, context cancellation, and the whole lifecycle when a
// Manager runs on it. newStore must return an empty store for each call;
// it may register cleanup with t.Cleanup.
//
//	func TestSQLiteDeclarations(t *testing.T) {
//		declarationstest.StoreConformance(t, func(t *testing.T) declarations.Store { return openTestDB(t) })
//	}
func StoreConformance(t *testing.T, newStore func(t *testing.T) declarations.Store) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, declarations.Store)
	}{
		{"CreateGet", confCreateGet},
		{"CreateInvalid", confCreateInvalid},
		{"CreateConcurrent", confCreateConcurrent},
		{"NotFound", confNotFound},
		{"NoSharedMemory", confNoSharedMemory},
		{"TransitionCAS", confTransitionCAS},
		{"TransitionMutateError", confTransitionMutateError},
		{"TransitionConcurrent", confTransitionConcurrent},
		{"List", confList},
		{"ContextCanceled", confContextCanceled},
		{"ManagerLifecycle", confManagerLifecycle},
		{"ManagerPolicy", confManagerPolicy},
		{"ManagerExecuting", confManagerExecuting},
		{"ManagerExpiry", confManagerExpiry},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newStore(t)) })
	}
}

// Epoch, the time the fixtures are created at, has a microsecond part,
// which every store must keep.
var Epoch = time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)

// confDeclaration returns a declaration with every field set, including
// text a careless encoding would mangle.
func confDeclaration(id, session string, state declarations.State, created time.Time) *declarations.Declaration {
	return &declarations.Declaration{
		ID: id, ContextID: session, Principal: "alice@example.com",
		Need: declarations.Need{
			Operation:  declarations.OpQuery,
			Parameters: declarations.Parameters{Query: "SELECT name, price\n\tFROM products WHERE name LIKE '%é%' -- \"quoted\"", Source: "catalog.v2"},
			Justification: declarations.Justification{
				UserRequest:      "Prices for “Product X” ✓",
				MissingKnowledge: "Current prices; the pool has 2025's.\nSecond line.",
				ExpectedUse:      "A table with <b>prices</b> & sources 😀",
			},
		},
		Fingerprint: "f00d", State: state,
		Decision:  declarations.DecisionRequireApproval,
		RuleID:    "rule:comm-query",
		Reason:    "queries need a person",
		DecidedBy: "operator:bob",
		CreatedAt: created, DecidedAt: created.Add(time.Second),
		ExpiresAt: created.Add(time.Hour), ExecutedAt: created.Add(2 * time.Second),
		Attempts: 1,
		Result:   &declarations.ResultRef{ContentSHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Bytes: 1 << 40, AttributionID: "att-1"},
		History: []declarations.Transition{
			{From: "", To: declarations.StateDeclared, At: created, By: "agent:alice@example.com"},
			{From: declarations.StateDeclared, To: state, At: created.Add(time.Second), By: "operator:bob", Reason: "ok\twith tab"},
		},
	}
}

// JSON is a comparable rendering of d: times in UTC, empty history as
// none, so only a real difference shows.
func JSON(d *declarations.Declaration) string {
	if d == nil {
		return "<nil>"
	}
	c := d.Clone()
	for _, tp := range []*time.Time{&c.CreatedAt, &c.DecidedAt, &c.ExpiresAt, &c.ExecutedAt} {
		*tp = tp.UTC()
	}
	if len(c.History) == 0 {
		c.History = nil
	}
	for i := range c.History {
		c.History[i].At = c.History[i].At.UTC()
	}
	b, _ := json.Marshal(c)
	return string(b)
}

func confSame(t *testing.T, what string, got, want *declarations.Declaration) {
	t.Helper()
	if g, w := JSON(got), JSON(want); g != w {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func confCreate(t *testing.T, st declarations.Store, d *declarations.Declaration) {
	t.Helper()
	if err := st.Create(context.Background(), d); err != nil {
		t.Fatalf("Create(%s): %v", d.ID, err)
	}
}

func confCreateGet(t *testing.T, st declarations.Store) {
	ctx := context.Background()
	want := confDeclaration("d1", "s1", declarations.StateApproved, Epoch)
	confCreate(t, st, want)
	got, err := st.Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	confSame(t, "Get after Create", got, want)

	// Zero times, no result and no history survive as such.
	bare := &declarations.Declaration{ID: "d2", ContextID: "s1", State: declarations.StateDeclared, CreatedAt: Epoch}
	confCreate(t, st, bare)
	got, err = st.Get(ctx, "d2")
	if err != nil {
		t.Fatal(err)
	}
	confSame(t, "Get of a bare declaration", got, bare)
	if got.Result != nil || !got.DecidedAt.IsZero() || !got.ExpiresAt.IsZero() {
		t.Errorf("bare declaration came back with a result or times: %s", JSON(got))
	}
}

func confCreateInvalid(t *testing.T, st declarations.Store) {
	ctx := context.Background()
	if err := st.Create(ctx, &declarations.Declaration{ContextID: "s1", State: declarations.StateDeclared}); !errors.Is(err, declarations.ErrInvalid) {
		t.Errorf("Create with empty ID: %v, want ErrInvalid", err)
	}
	confCreate(t, st, confDeclaration("d1", "s1", declarations.StateDeclared, Epoch))
	other := confDeclaration("d1", "s2", declarations.StateApproved, Epoch.Add(time.Hour))
	if err := st.Create(ctx, other); !errors.Is(err, declarations.ErrExists) {
		t.Errorf("Create with a stored ID: %v, want ErrExists", err)
	}
	got, err := st.Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ContextID != "s1" || got.State != declarations.StateDeclared {
		t.Errorf("a refused Create changed the stored declaration: %s", JSON(got))
	}
}

func confCreateConcurrent(t *testing.T, st declarations.Store) {
	const n = 20
	ok := racetest.Won(t, n, declarations.ErrExists, func(i int) error {
		return st.Create(context.Background(), confDeclaration("same", fmt.Sprint("s", i), declarations.StateDeclared, Epoch))
	})
	if ok != 1 {
		t.Errorf("%d concurrent Creates of one ID succeeded, want 1", ok)
	}
}

func confNotFound(t *testing.T, st declarations.Store) {
	ctx := context.Background()
	if _, err := st.Get(ctx, "missing"); !errors.Is(err, declarations.ErrNotFound) {
		t.Errorf("Get(missing): %v, want ErrNotFound", err)
	}
	called := false
	_, err := st.Transition(ctx, "missing", []declarations.State{declarations.StateDeclared}, declarations.StateApproved, func(*declarations.Declaration) error {
		called = true
		return nil
	})
	if !errors.Is(err, declarations.ErrNotFound) || called {
		t.Errorf("Transition(missing): %v (mutate called: %v), want ErrNotFound without mutate", err, called)
	}
}

func confNoSharedMemory(t *testing.T, st declarations.Store) {
	ctx := context.Background()
	in := confDeclaration("d1", "s1", declarations.StateApproved, Epoch)
	want := in.Clone()
	confCreate(t, st, in)
	scribble := func(d *declarations.Declaration) {
		d.ContextID, d.Need.Parameters.Query, d.Attempts = "evil", "DROP TABLE x", 99
		d.Result.Bytes = -1
		d.History[0].By = "evil"
		d.History = append(d.History, declarations.Transition{To: declarations.StateExecuted})
	}
	scribble(in)
	got, err := st.Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	confSame(t, "after changing what was passed to Create", got, want)
	scribble(got)
	again, err := st.Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	confSame(t, "after changing what Get returned", again, want)

	var kept *declarations.Declaration
	out, err := st.Transition(ctx, "d1", []declarations.State{declarations.StateApproved}, declarations.StateExecuting, func(d *declarations.Declaration) error {
		kept = d
		d.Attempts = 2
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want.Attempts, want.State = 2, declarations.StateExecuting
	scribble(out)
	scribble(kept)
	again, err = st.Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	confSame(t, "after changing what Transition returned and what mutate saw", again, want)
}

func confTransitionCAS(t *testing.T, st declarations.Store) {
	ctx := context.Background()
	d := confDeclaration("d1", "s1", declarations.StateDeclared, Epoch)
	d.Result, d.Attempts = nil, 0
	confCreate(t, st, d)

	// State not in from: ErrState with the stored declaration, no mutate.
	cur, err := st.Transition(ctx, "d1", []declarations.State{declarations.StateApproved, declarations.StateFailed}, declarations.StateExecuting, func(*declarations.Declaration) error {
		t.Error("mutate called although the state was not in from")
		return nil
	})
	if !errors.Is(err, declarations.ErrState) {
		t.Fatalf("Transition from the wrong state: %v, want ErrState", err)
	}
	confSame(t, "declaration returned with ErrState", cur, d)

	// State in from: mutate's changes and the new state are stored; the
	// ID and the state are the store's, whatever mutate does.
	at := Epoch.Add(time.Minute)
	got, err := st.Transition(ctx, "d1", []declarations.State{declarations.StateExpired, declarations.StateDeclared}, declarations.StateApproved, func(x *declarations.Declaration) error {
		if x.State != declarations.StateDeclared {
			t.Errorf("mutate saw state %s, want declared", x.State)
		}
		x.ID, x.State = "other", declarations.StateExecuted
		x.DecidedBy, x.DecidedAt, x.ExpiresAt = "operator:carol", at, at.Add(15*time.Minute)
		x.History = append(x.History, declarations.Transition{From: declarations.StateDeclared, To: declarations.StateApproved, At: at, By: "operator:carol"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := d.Clone()
	want.State, want.DecidedBy, want.DecidedAt, want.ExpiresAt = declarations.StateApproved, "operator:carol", at, at.Add(15*time.Minute)
	want.History = append(want.History, declarations.Transition{From: declarations.StateDeclared, To: declarations.StateApproved, At: at, By: "operator:carol"})
	confSame(t, "Transition result", got, want)
	stored, err := st.Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	confSame(t, "stored after Transition", stored, want)
	if _, err := st.Get(ctx, "other"); !errors.Is(err, declarations.ErrNotFound) {
		t.Errorf("mutate changing the ID created or found %q: %v", "other", err)
	}

	// A nil mutate only changes the state.
	got, err = st.Transition(ctx, "d1", []declarations.State{declarations.StateApproved}, declarations.StateExecuting, nil)
	if err != nil {
		t.Fatal(err)
	}
	want.State = declarations.StateExecuting
	confSame(t, "Transition with nil mutate", got, want)
}

func confTransitionMutateError(t *testing.T, st declarations.Store) {
	ctx := context.Background()
	d := confDeclaration("d1", "s1", declarations.StateApproved, Epoch)
	confCreate(t, st, d)
	boom := errors.New("boom")
	got, err := st.Transition(ctx, "d1", []declarations.State{declarations.StateApproved}, declarations.StateExecuting, func(x *declarations.Declaration) error {
		x.Attempts = 42
		return fmt.Errorf("wrapped: %w", boom)
	})
	if !errors.Is(err, boom) || got != nil {
		t.Errorf("Transition with failing mutate: %v, %v; want the mutate error and nil", got, err)
	}
	stored, err := st.Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	confSame(t, "after a failing mutate", stored, d)
}

// Race runs call n times at once (released together) and returns how
// many calls succeeded; a call failing with anything but lost (the error of
// a caller that lost the race) fails the test. While it runs,
// racetest.Running tells a deliberately broken store that other callers
// are on their way (TestConformanceCatchesBrokenStores).
func Race(t testing.TB, n int, lost error, call func() error) (won int) {
	t.Helper()
	return racetest.Won(t, n, lost, func(int) error { return call() })
}

// confTransitionConcurrent is the single-use guarantee at the store: of 20
// concurrent approved → executing transitions exactly one wins.
func confTransitionConcurrent(t *testing.T, st declarations.Store) {
	ctx := context.Background()
	d := confDeclaration("d1", "s1", declarations.StateApproved, Epoch)
	d.Attempts = 0
	confCreate(t, st, d)
	const n = 20
	won := Race(t, n, declarations.ErrState, func() error {
		_, err := st.Transition(ctx, "d1", []declarations.State{declarations.StateApproved}, declarations.StateExecuting, func(x *declarations.Declaration) error {
			x.Attempts++
			return nil
		})
		return err
	})
	if won != 1 {
		t.Errorf("%d of %d concurrent transitions won, want exactly 1", won, n)
	}
	stored, err := st.Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	if stored.State != declarations.StateExecuting || stored.Attempts != 1 {
		t.Errorf("after the race: state %s, attempts %d; want executing, 1", stored.State, stored.Attempts)
	}
}

func confList(t *testing.T, st declarations.Store) {
	ctx := context.Background()
	// Created out of order; b and c share a CreatedAt, so the ID decides.
	for _, d := range []*declarations.Declaration{
		confDeclaration("e", "s2", declarations.StateDeclared, Epoch.Add(4*time.Second)),
		confDeclaration("c", "s1", declarations.StateApproved, Epoch.Add(time.Second)),
		confDeclaration("a", "s1", declarations.StateDeclared, Epoch),
		confDeclaration("d", "s2", declarations.StateExpired, Epoch.Add(3*time.Second)),
		confDeclaration("b", "s1", declarations.StateExecuted, Epoch.Add(time.Second)),
	} {
		confCreate(t, st, d)
	}
	for _, c := range []struct {
		name   string
		filter declarations.Filter
		want   string
	}{
		{"all", declarations.Filter{}, "abcde"},
		{"session", declarations.Filter{ContextID: "s2"}, "de"},
		{"states", declarations.Filter{States: []declarations.State{declarations.StateDeclared, declarations.StateApproved}}, "ace"},
		{"session and states", declarations.Filter{ContextID: "s1", States: []declarations.State{declarations.StateDeclared, declarations.StateExecuted}}, "ab"},
		{"limit", declarations.Filter{Limit: 2}, "ab"},
		{"limit over count", declarations.Filter{ContextID: "s2", Limit: 10}, "de"},
		{"no match", declarations.Filter{ContextID: "s3"}, ""},
		{"no state matches", declarations.Filter{States: []declarations.State{declarations.StateFailed}}, ""},
	} {
		got, err := st.List(ctx, c.filter)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ids := ""
		for _, d := range got {
			ids += d.ID
		}
		if ids != c.want {
			t.Errorf("List %s: %q, want %q", c.name, ids, c.want)
		}
	}
	got, err := st.List(ctx, declarations.Filter{ContextID: "s1", Limit: 1})
	if err != nil || len(got) != 1 {
		t.Fatalf("List: %v, %v", got, err)
	}
	confSame(t, "listed declaration", got[0], confDeclaration("a", "s1", declarations.StateDeclared, Epoch))
	got[0].State = declarations.StateDenied
	again, err := st.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if again.State != declarations.StateDeclared {
		t.Error("changing a listed declaration changed the store")
	}
}

func confContextCanceled(t *testing.T, st declarations.Store) {
	confCreate(t, st, confDeclaration("d1", "s1", declarations.StateApproved, Epoch))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.Create(ctx, confDeclaration("d2", "s1", declarations.StateDeclared, Epoch)); !errors.Is(err, context.Canceled) {
		t.Errorf("Create: %v, want context.Canceled", err)
	}
	if _, err := st.Get(ctx, "d1"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get: %v, want context.Canceled", err)
	}
	if _, err := st.Transition(ctx, "d1", []declarations.State{declarations.StateApproved}, declarations.StateExecuting, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Transition: %v, want context.Canceled", err)
	}
	if _, err := st.List(ctx, declarations.Filter{}); !errors.Is(err, context.Canceled) {
		t.Errorf("List: %v, want context.Canceled", err)
	}
	d, err := st.Get(context.Background(), "d1")
	if err != nil || d.State != declarations.StateApproved {
		t.Errorf("after canceled calls: %v, %v; want d1 still approved", d, err)
	}
	if _, err := st.Get(context.Background(), "d2"); !errors.Is(err, declarations.ErrNotFound) {
		t.Errorf("a canceled Create stored d2: %v", err)
	}
}
