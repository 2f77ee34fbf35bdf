package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/internal/policy/contexts/contextstest"
	"github.com/airlock-dev/airlock/store"
)

// TestContextsConformance runs the contract every contexts.Store must
// keep, on a fresh file per case, with a second DB on the same file as the
// other process.
func TestContextsConformance(t *testing.T) {
	contextstest.StoreConformance(t, func(t *testing.T) (contexts.Store, contexts.Store) {
		a, path := openTemp(t, nil)
		return a, openPath(t, path)
	})
}

var ctxEpoch = time.Date(2026, 5, 6, 7, 8, 9, 101112000, time.UTC)

func testContext(id string) *contexts.Context {
	return &contexts.Context{
		ID: id, Principal: "alice", Role: "analyst", Policy: "default", PolicyVersion: "v1",
		Phase: contexts.PhasePlanning, Pools: []string{"p1"}, Env: map[string]string{"K": "v"},
		CreatedAt: ctxEpoch, CreatedBy: "server", UpdatedAt: ctxEpoch,
	}
}

func testSession(id string) *contexts.Session {
	return &contexts.Session{ID: id, ContextID: "c1", Principal: "alice", Transport: "stdio", CreatedAt: ctxEpoch, LastSeen: ctxEpoch}
}

// writeCalls are every writing method of contexts.Store, each failing
// the test if its callback runs.
func writeCalls(t *testing.T, st contexts.Store) map[string]func(context.Context) error {
	return map[string]func(context.Context) error{
		"EnsureContext": func(ctx context.Context) error { _, err := st.EnsureContext(ctx, testContext("c2")); return err },
		"CreateContext": func(ctx context.Context) error { return st.CreateContext(ctx, testContext("c2")) },
		"UpdateContext": func(ctx context.Context) error {
			_, err := st.UpdateContext(ctx, "c1", func(*contexts.Context) error { t.Error("mutate ran"); return nil })
			return err
		},
		"OpenSession": func(ctx context.Context) error {
			_, err := st.OpenSession(ctx, testSession("s2"), 0, 0)
			return err
		},
		"TouchSession": func(ctx context.Context) error { return st.TouchSession(ctx, "s1", ctxEpoch.Add(time.Hour)) },
		"CloseSession": func(ctx context.Context) error {
			_, err := st.CloseSession(ctx, "s1", "x", ctxEpoch.Add(time.Hour))
			return err
		},
		"CloseIdleSessions": func(ctx context.Context) error {
			_, err := st.CloseIdleSessions(ctx, ctxEpoch.Add(time.Hour), ctxEpoch.Add(time.Hour), "idle")
			return err
		},
		"UpdateUsage": func(ctx context.Context) error {
			return st.UpdateUsage(ctx, []string{"k"}, func(map[string][]byte) (map[string][]byte, error) {
				t.Error("fn ran")
				return nil, nil
			})
		},
		"UseChallenge": func(ctx context.Context) error { return st.UseChallenge(ctx, "n1", time.Now().Add(time.Hour)) },
	}
}

// seedContexts stores context c1, open session s1 and usage k=1.
func seedContexts(t *testing.T, db *store.DB) {
	t.Helper()
	ctx := context.Background()
	if err := db.CreateContext(ctx, testContext("c1")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.OpenSession(ctx, testSession("s1"), 0, 0); err != nil {
		t.Fatal(err)
	}
	err := db.UpdateUsage(ctx, []string{"k"}, func(map[string][]byte) (map[string][]byte, error) {
		return map[string][]byte{"k": []byte("1")}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestContextsReadOnly: a read-only handle (the operator CLI) reads
// contexts, sessions and usage and refuses every write before running a
// callback.
func TestContextsReadOnly(t *testing.T) {
	ctx := context.Background()
	rw, path := openTemp(t, nil)
	seedContexts(t, rw)
	ro := openRO(t, path)
	for name, call := range writeCalls(t, ro) {
		if err := call(ctx); !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("%s: %v, want ErrReadOnly", name, err)
		}
	}
	if c, err := ro.GetContext(ctx, "c1"); err != nil || c.Pools[0] != "p1" {
		t.Errorf("GetContext: %+v, %v", c, err)
	}
	if list, err := ro.ListContexts(ctx, ""); err != nil || len(list) != 1 {
		t.Errorf("ListContexts: %d, %v; want 1", len(list), err)
	}
	if s, err := ro.GetSession(ctx, "s1"); err != nil || !s.ClosedAt.IsZero() || !s.LastSeen.Equal(ctxEpoch) {
		t.Errorf("GetSession: %+v, %v; want s1 open and untouched", s, err)
	}
	if list, err := ro.ListSessions(ctx, "", false); err != nil || len(list) != 1 {
		t.Errorf("ListSessions: %d, %v; want 1", len(list), err)
	}
	if v, err := ro.Usage(ctx, "k"); err != nil || string(v) != "1" {
		t.Errorf("Usage: %q, %v", v, err)
	}
	if _, err := rw.GetContext(ctx, "c2"); !errors.Is(err, contexts.ErrNotFound) {
		t.Errorf("a refused write stored c2: %v", err)
	}
	if err := rw.UseChallenge(ctx, "n1", time.Now().Add(time.Hour)); err != nil {
		t.Errorf("a nonce refused by the read-only handle is spent: %v", err)
	}
}

// TestContextsClosed: every method of a closed DB says so.
func TestContextsClosed(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t, nil)
	seedContexts(t, db)
	db.Close()
	calls := writeCalls(t, db)
	calls["GetContext"] = func(ctx context.Context) error { _, err := db.GetContext(ctx, "c1"); return err }
	calls["ListContexts"] = func(ctx context.Context) error { _, err := db.ListContexts(ctx, ""); return err }
	calls["GetSession"] = func(ctx context.Context) error { _, err := db.GetSession(ctx, "s1"); return err }
	calls["ListSessions"] = func(ctx context.Context) error { _, err := db.ListSessions(ctx, "", false); return err }
	calls["Usage"] = func(ctx context.Context) error { _, err := db.Usage(ctx, "k"); return err }
	for name, call := range calls {
		if err := call(ctx); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestContextsUnavailable: when another process holds the write lock past
// the busy timeout, every write fails with ErrUnavailable without running
// its callback, and reads go on.
func TestContextsUnavailable(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t, &store.Options{BusyTimeout: 50 * time.Millisecond})
	seedContexts(t, db)
	lock := store.HoldWriteLock(t, store.RawOpen(t, path))
	calls := writeCalls(t, db)
	calls["OpenSession with a cap"] = func(ctx context.Context) error {
		_, err := db.OpenSession(ctx, testSession("s3"), 5, time.Hour)
		return err
	}
	for name, call := range calls {
		if err := call(ctx); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("%s under a held lock: %v, want ErrUnavailable", name, err)
		}
	}
	// A context that exists is ensured without the write lock.
	if c, err := db.EnsureContext(ctx, testContext("c1")); err != nil || c.ID != "c1" {
		t.Errorf("EnsureContext of a stored context under a held lock: %v, %v", c, err)
	}
	if v, err := db.Usage(ctx, "k"); err != nil || string(v) != "1" {
		t.Errorf("Usage under a held lock: %q, %v", v, err)
	}
	if _, err := lock.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := db.TouchSession(ctx, "s1", ctxEpoch.Add(time.Minute)); err != nil {
		t.Errorf("TouchSession once the lock is released: %v", err)
	}
}

// TestContextsRefused: values that could not be read back exactly are
// refused with ErrInvalid before anything is written.
func TestContextsRefused(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t, nil)
	seedContexts(t, db)
	for _, c := range []struct {
		name string
		edit func(*contexts.Context)
	}{
		{"NUL in the role", func(c *contexts.Context) { c.Role = "a\x00b" }},
		{"invalid UTF-8 in a pool", func(c *contexts.Context) { c.Pools = []string{"\xff"} }},
		{"invalid UTF-8 in an env key", func(c *contexts.Context) { c.Env = map[string]string{"\xc3": "v"} }},
		{"NUL in an env value", func(c *contexts.Context) { c.Env = map[string]string{"k": "\x00"} }},
		{"year 10000", func(c *contexts.Context) { c.UpdatedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := testContext("bad")
			c.edit(x)
			if err := db.CreateContext(ctx, x); !errors.Is(err, contexts.ErrInvalid) {
				t.Errorf("CreateContext: %v, want ErrInvalid", err)
			}
			_, err := db.UpdateContext(ctx, "c1", func(y *contexts.Context) error { c.edit(y); return nil })
			if !errors.Is(err, contexts.ErrInvalid) {
				t.Errorf("UpdateContext: %v, want ErrInvalid", err)
			}
			if got, err := db.GetContext(ctx, "c1"); err != nil || got.Role != "analyst" || got.Pools[0] != "p1" {
				t.Errorf("c1 changed by a refused update: %+v, %v", got, err)
			}
		})
	}
	badSession := testSession("s9")
	badSession.Transport = "\xff"
	if _, err := db.OpenSession(ctx, badSession, 0, 0); !errors.Is(err, contexts.ErrInvalid) {
		t.Errorf("OpenSession with invalid UTF-8: %v, want ErrInvalid", err)
	}
	if _, err := db.CloseSession(ctx, "s1", "done", time.Time{}); !errors.Is(err, contexts.ErrInvalid) {
		t.Errorf("CloseSession at the zero time (which would leave it open): %v, want ErrInvalid", err)
	}
	for name, value := range map[string][]byte{"NUL": []byte("1\x002"), "invalid UTF-8": {0xff}} {
		err := db.UpdateUsage(ctx, []string{"k"}, func(map[string][]byte) (map[string][]byte, error) {
			return map[string][]byte{"a": []byte("fine"), "k": value}, nil
		})
		if !errors.Is(err, contexts.ErrInvalid) {
			t.Errorf("UpdateUsage with %s: %v, want ErrInvalid", name, err)
		}
	}
	if v, _ := db.Usage(ctx, "a"); v != nil {
		t.Errorf("a refused UpdateUsage stored the values beside the bad one: %q", v)
	}
	if err := db.UseChallenge(ctx, "", time.Now().Add(time.Hour)); !errors.Is(err, contexts.ErrInvalid) {
		t.Errorf("UseChallenge with an empty nonce: %v, want ErrInvalid", err)
	}
}

// TestContextsRow checks the stored form the PostgreSQL twin must match:
// times in the fixed-width UTC layout, pools and env as JSON, an open
// session's closed_at NULL, usage values as their text.
func TestContextsRow(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t, nil)
	c := testContext("c1")
	c.Pools, c.Env = nil, nil
	c.CreatedAt = time.Date(2026, 1, 2, 8, 34, 5, 123456789, time.FixedZone("UTC+5:30", 5*3600+1800))
	if err := db.CreateContext(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := db.OpenSession(ctx, testSession("s1"), 0, 0); err != nil {
		t.Fatal(err)
	}
	err := db.UpdateUsage(ctx, []string{"k"}, func(map[string][]byte) (map[string][]byte, error) {
		return map[string][]byte{"k": []byte(`{"n":1}`)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	raw := store.RawOpen(t, path)
	var created, pools, env, value string
	var closedNull, elicitation int
	err = raw.QueryRow(`SELECT created_at, pools, env FROM contexts WHERE id = 'c1'`).Scan(&created, &pools, &env)
	if err != nil {
		t.Fatal(err)
	}
	if created != "2026-01-02T03:04:05.123456Z" || pools != "[]" || env != "{}" {
		t.Errorf("context stored as created_at %q, pools %q, env %q", created, pools, env)
	}
	err = raw.QueryRow(`SELECT closed_at IS NULL, elicitation FROM transport_sessions WHERE id = 's1'`).Scan(&closedNull, &elicitation)
	if err != nil || closedNull != 1 || elicitation != 0 {
		t.Errorf("open session stored with closed_at NULL = %d, elicitation %d, %v", closedNull, elicitation, err)
	}
	if err := raw.QueryRow(`SELECT value FROM usage WHERE key = 'k'`).Scan(&value); err != nil || value != `{"n":1}` {
		t.Errorf("usage stored as %q, %v", value, err)
	}
	got, err := db.GetContext(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC); got.CreatedAt != want || got.Pools != nil || got.Env != nil {
		t.Errorf("read back as created %v, pools %#v, env %#v", got.CreatedAt, got.Pools, got.Env)
	}
}

// TestUseChallengeForgetsExpired: a used nonce is kept until its expiry
// and forgotten by a later UseChallenge after it.
func TestUseChallengeForgetsExpired(t *testing.T) {
	ctx := context.Background()
	db, path := openTemp(t, nil)
	if err := db.UseChallenge(ctx, "old", time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := db.UseChallenge(ctx, "live", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := store.RawOpen(t, path).QueryRow(`SELECT COUNT(*) FROM used_challenges`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d nonces kept, %v; want only the live one", n, err)
	}
	if err := db.UseChallenge(ctx, "live", time.Now().Add(time.Hour)); !errors.Is(err, contexts.ErrReplayed) {
		t.Errorf("replay of a live nonce: %v, want ErrReplayed", err)
	}
}

// TestOpenSessionCostFlat: opening a session under a cap reads the count
// and only the rows it evicts, so its cost does not grow with the sessions
// the principal already holds. It read every live row of the principal
// on each open: opening n sessions read n²/2 rows (half of all the bytes
// allocated under 1,000 HTTP sessions, issue 27).
func TestOpenSessionCostFlat(t *testing.T) {
	ctx := context.Background()
	db, _ := openTemp(t, nil)
	seedContexts(t, db)
	n := 0
	open := func() {
		n++
		s := testSession(fmt.Sprintf("flat%04d", n))
		s.Principal = "bob"
		if _, err := db.OpenSession(ctx, s, 1000, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		open()
	}
	few := testing.AllocsPerRun(10, open)
	for range 300 {
		open()
	}
	many := testing.AllocsPerRun(10, open)
	if many > 2*few {
		t.Fatalf("opening a session allocates %.0f times with 10 open and %.0f with 320: the cost grows with the sessions held", few, many)
	}
}
