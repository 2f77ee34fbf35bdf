// Package contextstest holds the conformance suite every [contexts.Store]
// must pass (the SQLite and PostgreSQL stores run it, and it runs itself
// against an in-memory store and against mutants with one bug each). It is
// test code: only _test.go files may import it, and the airlock binary
// never links it (TestTestPackagesNotShipped in the module root).
package contextstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/racetest"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// StoreConformance checks that a Store keeps the contract documented on
// [contexts.Store]: exact round trips, no shared memory, atomic
// read-modify-write that loses no update, a session cap that holds under
// concurrency, single use of challenges, and context cancellation.
//
// open must return two handles on one new, empty database for each call,
// as two processes sharing it would have them; every concurrency check
// races callers on both. A backend with no notion of a second handle (an
// in-memory store) returns the same Store twice. open may register cleanup
// with t.Cleanup.
//
//	func TestSQLiteContexts(t *testing.T) {
//		contextstest.StoreConformance(t, func(t *testing.T) (contexts.Store, contexts.Store) {
//			a, path := openTemp(t)
//			return a, openPath(t, path)
//		})
//	}
func StoreConformance(t *testing.T, open func(t *testing.T) (contexts.Store, contexts.Store)) {
	t.Helper()
	for _, c := range []struct {
		name string
		fn   func(t *testing.T, a, b contexts.Store)
	}{
		{"ContextRoundTrip", confContextRoundTrip},
		{"ContextInvalid", confContextInvalid},
		{"EnsureContext", confEnsureContext},
		{"EnsureContextRace", confEnsureContextRace},
		{"UpdateContext", confUpdateContext},
		{"UpdateContextConcurrent", confUpdateContextConcurrent},
		{"ListContexts", confListContexts},
		{"ContextNoSharedMemory", confContextNoSharedMemory},
		{"SessionRoundTrip", confSessionRoundTrip},
		{"TouchAndClose", confTouchAndClose},
		{"SessionCap", confSessionCap},
		{"SessionCapIdle", confSessionCapIdle},
		{"SessionCapConcurrent", confSessionCapConcurrent},
		{"CloseIdleSessions", confCloseIdleSessions},
		{"ListSessions", confListSessions},
		{"Usage", confUsage},
		{"UsageConcurrent", confUsageConcurrent},
		{"UseChallenge", confUseChallenge},
		{"ContextCanceled", confContextCanceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := open(t)
			c.fn(t, a, b)
		})
	}
}

// confEpoch has a microsecond part, which every store must keep.
var confEpoch = time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC)

// confContext returns a context with every field set, including text a
// careless encoding would mangle.
func confContext(id, principal string, created time.Time) *contexts.Context {
	return &contexts.Context{
		ID: id, Parent: "ctx_parent", Principal: principal, Role: "analyst",
		Policy: "default", PolicyVersion: "v3 “quoted” ✓", Phase: contexts.PhasePlanning,
		Pools:     []string{"catalog", "prices-2025", "<b>&amp;</b>"},
		Env:       map[string]string{"REGION": "eu-west-1", "NOTE": "line1\nline2\t😀", "EMPTY": ""},
		CreatedAt: created, CreatedBy: "operator:bob",
		UpdatedAt: created.Add(time.Second),
	}
}

// confCtxJSON is a comparable rendering of c: times in UTC, no pools or
// env as none, so only a real difference shows.
func confCtxJSON(c *contexts.Context) string {
	if c == nil {
		return "<nil>"
	}
	x := c.Clone()
	x.CreatedAt, x.UpdatedAt = x.CreatedAt.UTC(), x.UpdatedAt.UTC()
	if len(x.Pools) == 0 {
		x.Pools = nil
	}
	if len(x.Env) == 0 {
		x.Env = nil
	}
	b, _ := json.Marshal(x)
	return string(b)
}

// confSame compares got and want by a comparable rendering (confCtxJSON,
// confSessJSON), so a failure shows both in full.
func confSame[T any](t *testing.T, what string, render func(T) string, got, want T) {
	t.Helper()
	if g, w := render(got), render(want); g != w {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func confSameCtx(t *testing.T, what string, got, want *contexts.Context) {
	t.Helper()
	confSame(t, what, confCtxJSON, got, want)
}

// confGet reads id with get (named what in the failure): a read that
// fails fails the test.
func confGet[T any](t *testing.T, what string, get func(context.Context, string) (T, error), id string) T {
	t.Helper()
	v, err := get(context.Background(), id)
	if err != nil {
		t.Fatalf("%s(%s): %v", what, id, err)
	}
	return v
}

func confGetCtx(t *testing.T, st contexts.Store, id string) *contexts.Context {
	t.Helper()
	return confGet(t, "GetContext", st.GetContext, id)
}

func confCreateCtx(t *testing.T, st contexts.Store, c *contexts.Context) {
	t.Helper()
	if err := st.CreateContext(context.Background(), c); err != nil {
		t.Fatalf("CreateContext(%s): %v", c.ID, err)
	}
}

func confContextRoundTrip(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	want := confContext("c1", "alice", confEpoch)
	confCreateCtx(t, a, want)
	for name, st := range map[string]contexts.Store{"same handle": a, "other handle": b} {
		confSameCtx(t, "GetContext through the "+name, confGetCtx(t, st, "c1"), want)
	}

	// A default context with nothing optional set survives as such.
	bare := &contexts.Context{ID: contexts.DefaultID("alice", "analyst"), Principal: "alice", Phase: contexts.PhaseExecution, CreatedAt: confEpoch}
	confCreateCtx(t, b, bare)
	got := confGetCtx(t, a, bare.ID)
	confSameCtx(t, "GetContext of a bare context", got, bare)
	if !got.IsDefault() || len(got.Pools) != 0 || len(got.Env) != 0 {
		t.Errorf("bare context came back with a parent, pools or env: %s", confCtxJSON(got))
	}

	other := confContext("c1", "mallory", confEpoch.Add(time.Hour))
	for name, st := range map[string]contexts.Store{"same handle": a, "other handle": b} {
		if err := st.CreateContext(ctx, other); !errors.Is(err, contexts.ErrExists) {
			t.Errorf("CreateContext of a stored id through the %s: %v, want ErrExists", name, err)
		}
	}
	confSameCtx(t, "after a refused CreateContext", confGetCtx(t, b, "c1"), want)
	for name, st := range map[string]contexts.Store{"same handle": a, "other handle": b} {
		if _, err := st.GetContext(ctx, "missing"); !errors.Is(err, contexts.ErrNotFound) {
			t.Errorf("GetContext(missing) through the %s: %v, want ErrNotFound", name, err)
		}
	}
}

// confContextInvalid: a context no context may hold is refused with
// ErrInvalid, and nothing is stored.
func confContextInvalid(t *testing.T, a, _ contexts.Store) {
	ctx := context.Background()
	noID := confContext("", "alice", confEpoch)
	badPhase := confContext("c2", "alice", confEpoch)
	badPhase.Phase = "executing"
	for name, c := range map[string]*contexts.Context{"empty id": noID, "unknown phase": badPhase} {
		if err := a.CreateContext(ctx, c); !errors.Is(err, contexts.ErrInvalid) {
			t.Errorf("CreateContext with %s: %v, want ErrInvalid", name, err)
		}
		if _, err := a.EnsureContext(ctx, c); !errors.Is(err, contexts.ErrInvalid) {
			t.Errorf("EnsureContext with %s: %v, want ErrInvalid", name, err)
		}
	}
	if list, err := a.ListContexts(ctx, ""); err != nil || len(list) != 0 {
		t.Fatalf("after refused creates: %d contexts, %v; want none", len(list), err)
	}
	want := confContext("c1", "alice", confEpoch)
	confCreateCtx(t, a, want)
	_, err := a.UpdateContext(ctx, "c1", func(c *contexts.Context) error {
		c.Phase, c.Role = "", "admin"
		return nil
	})
	if !errors.Is(err, contexts.ErrInvalid) {
		t.Errorf("UpdateContext to an empty phase: %v, want ErrInvalid", err)
	}
	confSameCtx(t, "after a refused UpdateContext", confGetCtx(t, a, "c1"), want)
}

func confEnsureContext(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	first := confContext("c1", "alice", confEpoch)
	got, err := a.EnsureContext(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	confSameCtx(t, "EnsureContext of a new id", got, first)
	confSameCtx(t, "stored by EnsureContext", confGetCtx(t, b, "c1"), first)

	// A second Ensure, from either handle, returns the stored row
	// unchanged, whatever it was given.
	second := confContext("c1", "alice", confEpoch.Add(time.Hour))
	second.Phase, second.Pools, second.CreatedBy = contexts.PhaseExecution, []string{"other"}, "someone else"
	for name, st := range map[string]contexts.Store{"same handle": a, "other handle": b} {
		got, err := st.EnsureContext(ctx, second)
		if err != nil {
			t.Fatalf("EnsureContext of a stored id through the %s: %v", name, err)
		}
		confSameCtx(t, "EnsureContext of a stored id through the "+name, got, first)
	}
	confSameCtx(t, "stored after the second EnsureContext", confGetCtx(t, a, "c1"), first)
}

// confEnsureContextRace: callers on both handles ensure one id at once,
// each with a different context; one row is stored and every caller gets
// exactly it.
func confEnsureContextRace(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	const perHandle = 8
	id := contexts.DefaultID("alice", "analyst")
	got := make([]*contexts.Context, 2*perHandle)
	errs := make([]error, 2*perHandle)
	inputs := make([]string, 2*perHandle)
	cs := make([]*contexts.Context, 2*perHandle)
	for i := range cs {
		cs[i] = confContext(id, "alice", confEpoch)
		cs[i].Parent, cs[i].CreatedBy = "", fmt.Sprint("caller ", i)
		inputs[i] = confCtxJSON(cs[i])
	}
	racetest.Go(2*perHandle, func(i int) {
		got[i], errs[i] = [2]contexts.Store{a, b}[i%2].EnsureContext(ctx, cs[i])
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	stored := confGetCtx(t, a, id)
	if !slices.Contains(inputs, confCtxJSON(stored)) {
		t.Errorf("stored context is none of the inputs: %s", confCtxJSON(stored))
	}
	for i, c := range got {
		confSameCtx(t, fmt.Sprint("caller ", i), c, stored)
	}
	if list, err := b.ListContexts(ctx, "alice"); err != nil || len(list) != 1 {
		t.Errorf("after the race: %d contexts, %v; want 1", len(list), err)
	}
}

func confUpdateContext(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	orig := confContext("c1", "alice", confEpoch)
	confCreateCtx(t, a, orig)

	at := confEpoch.Add(time.Minute)
	got, err := b.UpdateContext(ctx, "c1", func(c *contexts.Context) error {
		confSameCtx(t, "what mutate was given", c, orig)
		c.ID = "other" // the store keeps the id
		c.Phase, c.PolicyVersion, c.UpdatedAt = contexts.PhaseExecution, "v4", at
		c.Pools = c.Pools[:1]
		c.Env["REGION"] = "us-east-1"
		delete(c.Env, "EMPTY")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := orig.Clone()
	want.Phase, want.PolicyVersion, want.UpdatedAt = contexts.PhaseExecution, "v4", at
	want.Pools = want.Pools[:1]
	want.Env["REGION"] = "us-east-1"
	delete(want.Env, "EMPTY")
	confSameCtx(t, "UpdateContext result", got, want)
	confSameCtx(t, "stored after UpdateContext", confGetCtx(t, a, "c1"), want)
	if _, err := a.GetContext(ctx, "other"); !errors.Is(err, contexts.ErrNotFound) {
		t.Errorf("mutate changing the id created or found %q: %v", "other", err)
	}

	// A failing mutate: its error comes back unchanged, nothing stored.
	boom := errors.New("boom")
	for name, st := range map[string]contexts.Store{"same handle": b, "other handle": a} {
		got, err := st.UpdateContext(ctx, "c1", func(c *contexts.Context) error {
			c.Phase, c.Pools = contexts.PhasePlanning, append(c.Pools, "leak")
			return boom
		})
		if err != boom || got != nil {
			t.Errorf("UpdateContext with a failing mutate through the %s: %v, %v; want nil and the mutate error itself", name, got, err)
		}
	}
	confSameCtx(t, "stored after failing mutates", confGetCtx(t, b, "c1"), want)

	called := false
	_, err = a.UpdateContext(ctx, "missing", func(*contexts.Context) error {
		called = true
		return nil
	})
	if !errors.Is(err, contexts.ErrNotFound) || called {
		t.Errorf("UpdateContext(missing): %v (mutate called: %v), want ErrNotFound without mutate", err, called)
	}
}

// confUpdateContextConcurrent: read-modify-write loses no update, between
// handles either: every caller's pool is in the result.
func confUpdateContextConcurrent(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	c := confContext("c1", "alice", confEpoch)
	c.Pools = nil
	confCreateCtx(t, a, c)
	const perHandle = 10
	want := make([]string, 0, 2*perHandle)
	for i := range 2 * perHandle {
		want = append(want, fmt.Sprintf("p%02d", i))
	}
	racetest.Go(2*perHandle, func(i int) {
		_, err := [2]contexts.Store{a, b}[i%2].UpdateContext(ctx, "c1", func(c *contexts.Context) error {
			c.Pools = append(c.Pools, want[i])
			return nil
		})
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	})
	got := confGetCtx(t, b, "c1").Pools
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("after %d concurrent updates pools are %v, want %v (an update was lost)", len(want), got, want)
	}
}

func confListContexts(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	// Created out of order, through both handles.
	for i, c := range []*contexts.Context{
		confContext("e", "bob", confEpoch.Add(4*time.Second)),
		confContext("c", "alice", confEpoch.Add(2*time.Second)),
		confContext("a", "alice", confEpoch),
		confContext("d", "bob", confEpoch.Add(3*time.Second)),
		confContext("b", "alice", confEpoch.Add(time.Second)),
	} {
		confCreateCtx(t, [2]contexts.Store{a, b}[i%2], c)
	}
	for _, c := range []struct{ principal, want string }{
		{"", "abcde"},
		{"alice", "abc"},
		{"bob", "de"},
		{"carol", ""},
	} {
		for name, st := range map[string]contexts.Store{"same handle": a, "other handle": b} {
			list, err := st.ListContexts(ctx, c.principal)
			if err != nil {
				t.Fatal(err)
			}
			ids := ""
			for _, x := range list {
				ids += x.ID
			}
			if ids != c.want {
				t.Errorf("ListContexts(%q) through the %s: %q, want %q", c.principal, name, ids, c.want)
			}
		}
	}
	list, err := a.ListContexts(ctx, "bob")
	if err != nil || len(list) != 2 {
		t.Fatalf("ListContexts(bob): %v, %v", list, err)
	}
	confSameCtx(t, "listed context", list[0], confContext("d", "bob", confEpoch.Add(3*time.Second)))
}

// confContextNoSharedMemory: nothing a Store is given or returns aliases
// what it stores.
func confContextNoSharedMemory(t *testing.T, a, _ contexts.Store) {
	ctx := context.Background()
	scribble := func(c *contexts.Context) {
		c.Role, c.Phase = "admin", contexts.PhaseExecution
		c.Pools[0] = "evil"
		c.Pools = append(c.Pools, "more")
		c.Env["REGION"] = "evil"
		c.Env["NEW"] = "x"
	}
	in := confContext("c1", "alice", confEpoch)
	want := in.Clone()
	confCreateCtx(t, a, in)
	scribble(in)
	confSameCtx(t, "after changing what was passed to CreateContext", confGetCtx(t, a, "c1"), want)

	in2 := confContext("c2", "alice", confEpoch)
	want2 := in2.Clone()
	out2, err := a.EnsureContext(ctx, in2)
	if err != nil {
		t.Fatal(err)
	}
	scribble(in2)
	scribble(out2)
	confSameCtx(t, "after changing what was passed to and returned by EnsureContext", confGetCtx(t, a, "c2"), want2)

	scribble(confGetCtx(t, a, "c1"))
	list, err := a.ListContexts(ctx, "")
	if err != nil || len(list) == 0 {
		t.Fatalf("ListContexts: %v, %v", list, err)
	}
	scribble(list[0])
	confSameCtx(t, "after changing what GetContext and ListContexts returned", confGetCtx(t, a, "c1"), want)

	var kept *contexts.Context
	out, err := a.UpdateContext(ctx, "c1", func(c *contexts.Context) error {
		kept = c
		c.PolicyVersion = "v9"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want.PolicyVersion = "v9"
	scribble(out)
	scribble(kept)
	confSameCtx(t, "after changing what UpdateContext returned and what mutate saw", confGetCtx(t, a, "c1"), want)
}
