package declarations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// StoreConformance checks that a Store keeps the contract documented on
// [Store]: exact round trips, no shared memory, compare-and-swap
// transitions that exactly one of many concurrent callers wins, filtered
// and ordered lists, context cancellation, and the whole lifecycle when a
// Manager runs on it. newStore must return an empty store for each call;
// it may register cleanup with t.Cleanup.
//
//	func TestSQLiteDeclarations(t *testing.T) {
//		declarations.StoreConformance(t, func(t *testing.T) declarations.Store { return openTestDB(t) })
//	}
func StoreConformance(t *testing.T, newStore func(t *testing.T) Store) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(*testing.T, Store)
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
		{"ManagerExpiry", confManagerExpiry},
	} {
		t.Run(c.name, func(t *testing.T) { c.fn(t, newStore(t)) })
	}
}

// confEpoch has a microsecond part, which every store must keep.
var confEpoch = time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)

// confDeclaration returns a declaration with every field set, including
// text a careless encoding would mangle.
func confDeclaration(id, session string, state State, created time.Time) *Declaration {
	return &Declaration{
		ID: id, ContextID: session, Principal: "alice@example.com",
		Need: Need{
			Operation:  OpQuery,
			Parameters: Parameters{Query: "SELECT name, price\n\tFROM products WHERE name LIKE '%é%' -- \"quoted\"", Source: "catalog.v2"},
			Justification: Justification{
				UserRequest:      "Prices for “Product X” ✓",
				MissingKnowledge: "Current prices; the pool has 2025's.\nSecond line.",
				ExpectedUse:      "A table with <b>prices</b> & sources 😀",
			},
		},
		Fingerprint: "f00d", State: state,
		Decision:  DecisionRequireApproval,
		RuleID:    "rule:comm-query",
		Reason:    "queries need a person",
		DecidedBy: "operator:bob",
		CreatedAt: created, DecidedAt: created.Add(time.Second),
		ExpiresAt: created.Add(time.Hour), ExecutedAt: created.Add(2 * time.Second),
		Attempts: 1,
		Result:   &ResultRef{ContentSHA256: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Bytes: 1 << 40, AttributionID: "att-1"},
		History: []Transition{
			{From: "", To: StateDeclared, At: created, By: "agent:alice@example.com"},
			{From: StateDeclared, To: state, At: created.Add(time.Second), By: "operator:bob", Reason: "ok\twith tab"},
		},
	}
}

// confJSON is a comparable rendering of d: times in UTC, empty history as
// none, so only a real difference shows.
func confJSON(d *Declaration) string {
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

func confSame(t *testing.T, what string, got, want *Declaration) {
	t.Helper()
	if g, w := confJSON(got), confJSON(want); g != w {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func confCreate(t *testing.T, st Store, d *Declaration) {
	t.Helper()
	if err := st.Create(context.Background(), d); err != nil {
		t.Fatalf("Create(%s): %v", d.ID, err)
	}
}

func confCreateGet(t *testing.T, st Store) {
	ctx := context.Background()
	want := confDeclaration("d1", "s1", StateApproved, confEpoch)
	confCreate(t, st, want)
	got, err := st.Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	confSame(t, "Get after Create", got, want)

	// Zero times, no result and no history survive as such.
	bare := &Declaration{ID: "d2", ContextID: "s1", State: StateDeclared, CreatedAt: confEpoch}
	confCreate(t, st, bare)
	got, err = st.Get(ctx, "d2")
	if err != nil {
		t.Fatal(err)
	}
	confSame(t, "Get of a bare declaration", got, bare)
	if got.Result != nil || !got.DecidedAt.IsZero() || !got.ExpiresAt.IsZero() {
		t.Errorf("bare declaration came back with a result or times: %s", confJSON(got))
	}
}

func confCreateInvalid(t *testing.T, st Store) {
	ctx := context.Background()
	if err := st.Create(ctx, &Declaration{ContextID: "s1", State: StateDeclared}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Create with empty ID: %v, want ErrInvalid", err)
	}
	confCreate(t, st, confDeclaration("d1", "s1", StateDeclared, confEpoch))
	other := confDeclaration("d1", "s2", StateApproved, confEpoch.Add(time.Hour))
	if err := st.Create(ctx, other); !errors.Is(err, ErrExists) {
		t.Errorf("Create with a stored ID: %v, want ErrExists", err)
	}
	got, err := st.Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ContextID != "s1" || got.State != StateDeclared {
		t.Errorf("a refused Create changed the stored declaration: %s", confJSON(got))
	}
}

func confCreateConcurrent(t *testing.T, st Store) {
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = st.Create(context.Background(), confDeclaration("same", fmt.Sprint("s", i), StateDeclared, confEpoch))
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrExists):
			t.Errorf("concurrent Create: %v, want nil or ErrExists", err)
		}
	}
	if ok != 1 {
		t.Errorf("%d concurrent Creates of one ID succeeded, want 1", ok)
	}
}

func confNotFound(t *testing.T, st Store) {
	ctx := context.Background()
	if _, err := st.Get(ctx, "missing"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(missing): %v, want ErrNotFound", err)
	}
	called := false
	_, err := st.Transition(ctx, "missing", []State{StateDeclared}, StateApproved, func(*Declaration) error {
		called = true
		return nil
	})
	if !errors.Is(err, ErrNotFound) || called {
		t.Errorf("Transition(missing): %v (mutate called: %v), want ErrNotFound without mutate", err, called)
	}
}

func confNoSharedMemory(t *testing.T, st Store) {
	ctx := context.Background()
	in := confDeclaration("d1", "s1", StateApproved, confEpoch)
	want := in.Clone()
	confCreate(t, st, in)
	scribble := func(d *Declaration) {
		d.ContextID, d.Need.Parameters.Query, d.Attempts = "evil", "DROP TABLE x", 99
		d.Result.Bytes = -1
		d.History[0].By = "evil"
		d.History = append(d.History, Transition{To: StateExecuted})
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

	var kept *Declaration
	out, err := st.Transition(ctx, "d1", []State{StateApproved}, StateExecuting, func(d *Declaration) error {
		kept = d
		d.Attempts = 2
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want.Attempts, want.State = 2, StateExecuting
	scribble(out)
	scribble(kept)
	again, err = st.Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	confSame(t, "after changing what Transition returned and what mutate saw", again, want)
}

func confTransitionCAS(t *testing.T, st Store) {
	ctx := context.Background()
	d := confDeclaration("d1", "s1", StateDeclared, confEpoch)
	d.Result, d.Attempts = nil, 0
	confCreate(t, st, d)

	// State not in from: ErrState with the stored declaration, no mutate.
	cur, err := st.Transition(ctx, "d1", []State{StateApproved, StateFailed}, StateExecuting, func(*Declaration) error {
		t.Error("mutate called although the state was not in from")
		return nil
	})
	if !errors.Is(err, ErrState) {
		t.Fatalf("Transition from the wrong state: %v, want ErrState", err)
	}
	confSame(t, "declaration returned with ErrState", cur, d)

	// State in from: mutate's changes and the new state are stored; the
	// ID and the state are the store's, whatever mutate does.
	at := confEpoch.Add(time.Minute)
	got, err := st.Transition(ctx, "d1", []State{StateExpired, StateDeclared}, StateApproved, func(x *Declaration) error {
		if x.State != StateDeclared {
			t.Errorf("mutate saw state %s, want declared", x.State)
		}
		x.ID, x.State = "other", StateExecuted
		x.DecidedBy, x.DecidedAt, x.ExpiresAt = "operator:carol", at, at.Add(15*time.Minute)
		x.History = append(x.History, Transition{From: StateDeclared, To: StateApproved, At: at, By: "operator:carol"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := d.Clone()
	want.State, want.DecidedBy, want.DecidedAt, want.ExpiresAt = StateApproved, "operator:carol", at, at.Add(15*time.Minute)
	want.History = append(want.History, Transition{From: StateDeclared, To: StateApproved, At: at, By: "operator:carol"})
	confSame(t, "Transition result", got, want)
	stored, err := st.Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	confSame(t, "stored after Transition", stored, want)
	if _, err := st.Get(ctx, "other"); !errors.Is(err, ErrNotFound) {
		t.Errorf("mutate changing the ID created or found %q: %v", "other", err)
	}

	// A nil mutate only changes the state.
	got, err = st.Transition(ctx, "d1", []State{StateApproved}, StateExecuting, nil)
	if err != nil {
		t.Fatal(err)
	}
	want.State = StateExecuting
	confSame(t, "Transition with nil mutate", got, want)
}

func confTransitionMutateError(t *testing.T, st Store) {
	ctx := context.Background()
	d := confDeclaration("d1", "s1", StateApproved, confEpoch)
	confCreate(t, st, d)
	boom := errors.New("boom")
	got, err := st.Transition(ctx, "d1", []State{StateApproved}, StateExecuting, func(x *Declaration) error {
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

// confTransitionConcurrent is the single-use guarantee at the store: of 20
// concurrent approved → executing transitions exactly one wins.
func confTransitionConcurrent(t *testing.T, st Store) {
	ctx := context.Background()
	d := confDeclaration("d1", "s1", StateApproved, confEpoch)
	d.Attempts = 0
	confCreate(t, st, d)
	const n = 20
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			_, errs[i] = st.Transition(ctx, "d1", []State{StateApproved}, StateExecuting, func(x *Declaration) error {
				x.Attempts++
				return nil
			})
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrState):
			t.Errorf("losing Transition: %v, want ErrState", err)
		}
	}
	if won != 1 {
		t.Errorf("%d of %d concurrent transitions won, want exactly 1", won, n)
	}
	stored, err := st.Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	if stored.State != StateExecuting || stored.Attempts != 1 {
		t.Errorf("after the race: state %s, attempts %d; want executing, 1", stored.State, stored.Attempts)
	}
}

func confList(t *testing.T, st Store) {
	ctx := context.Background()
	// Created out of order; b and c share a CreatedAt, so the ID decides.
	for _, d := range []*Declaration{
		confDeclaration("e", "s2", StateDeclared, confEpoch.Add(4*time.Second)),
		confDeclaration("c", "s1", StateApproved, confEpoch.Add(time.Second)),
		confDeclaration("a", "s1", StateDeclared, confEpoch),
		confDeclaration("d", "s2", StateExpired, confEpoch.Add(3*time.Second)),
		confDeclaration("b", "s1", StateExecuted, confEpoch.Add(time.Second)),
	} {
		confCreate(t, st, d)
	}
	for _, c := range []struct {
		name   string
		filter Filter
		want   string
	}{
		{"all", Filter{}, "abcde"},
		{"session", Filter{ContextID: "s2"}, "de"},
		{"states", Filter{States: []State{StateDeclared, StateApproved}}, "ace"},
		{"session and states", Filter{ContextID: "s1", States: []State{StateDeclared, StateExecuted}}, "ab"},
		{"limit", Filter{Limit: 2}, "ab"},
		{"limit over count", Filter{ContextID: "s2", Limit: 10}, "de"},
		{"no match", Filter{ContextID: "s3"}, ""},
		{"no state matches", Filter{States: []State{StateFailed}}, ""},
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
	got, err := st.List(ctx, Filter{ContextID: "s1", Limit: 1})
	if err != nil || len(got) != 1 {
		t.Fatalf("List: %v, %v", got, err)
	}
	confSame(t, "listed declaration", got[0], confDeclaration("a", "s1", StateDeclared, confEpoch))
	got[0].State = StateDenied
	again, err := st.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if again.State != StateDeclared {
		t.Error("changing a listed declaration changed the store")
	}
}

func confContextCanceled(t *testing.T, st Store) {
	confCreate(t, st, confDeclaration("d1", "s1", StateApproved, confEpoch))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := st.Create(ctx, confDeclaration("d2", "s1", StateDeclared, confEpoch)); !errors.Is(err, context.Canceled) {
		t.Errorf("Create: %v, want context.Canceled", err)
	}
	if _, err := st.Get(ctx, "d1"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get: %v, want context.Canceled", err)
	}
	if _, err := st.Transition(ctx, "d1", []State{StateApproved}, StateExecuting, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Transition: %v, want context.Canceled", err)
	}
	if _, err := st.List(ctx, Filter{}); !errors.Is(err, context.Canceled) {
		t.Errorf("List: %v, want context.Canceled", err)
	}
	d, err := st.Get(context.Background(), "d1")
	if err != nil || d.State != StateApproved {
		t.Errorf("after canceled calls: %v, %v; want d1 still approved", d, err)
	}
	if _, err := st.Get(context.Background(), "d2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a canceled Create stored d2: %v", err)
	}
}
