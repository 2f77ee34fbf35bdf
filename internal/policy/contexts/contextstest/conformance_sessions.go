package contextstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/racetest"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// The sessions, usage and challenge checks of StoreConformance.

// confSession returns an open session of principal in contextID, created
// and last seen at created.
func confSession(id, contextID, principal string, created time.Time) *contexts.Session {
	return &contexts.Session{
		ID: id, ContextID: contextID, Principal: principal, Transport: "stdio",
		Elicitation: true, CreatedAt: created, LastSeen: created,
	}
}

// confSessJSON is a comparable rendering of s, times in UTC.
func confSessJSON(s *contexts.Session) string {
	if s == nil {
		return "<nil>"
	}
	x := *s
	x.CreatedAt, x.LastSeen, x.ClosedAt = x.CreatedAt.UTC(), x.LastSeen.UTC(), x.ClosedAt.UTC()
	b, _ := json.Marshal(x)
	return string(b)
}

func confSameSess(t *testing.T, what string, got, want *contexts.Session) {
	t.Helper()
	confSame(t, what, confSessJSON, got, want)
}

func confOpen(t *testing.T, st contexts.Store, s *contexts.Session) {
	t.Helper()
	if _, err := st.OpenSession(context.Background(), s, 0, 0); err != nil {
		t.Fatalf("OpenSession(%s): %v", s.ID, err)
	}
}

func confGetSess(t *testing.T, st contexts.Store, id string) *contexts.Session {
	t.Helper()
	return confGet(t, "GetSession", st.GetSession, id)
}

// confSessionIDs lists the ids of the sessions of contextID, in order.
func confSessionIDs(t *testing.T, st contexts.Store, contextID string, openOnly bool) string {
	t.Helper()
	list, err := st.ListSessions(context.Background(), contextID, openOnly)
	if err != nil {
		t.Fatalf("ListSessions(%q, %v): %v", contextID, openOnly, err)
	}
	ids := ""
	for _, s := range list {
		ids += s.ID
	}
	return ids
}

func confSessionRoundTrip(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	want := confSession("s1", "c1", "alice “a” ✓", confEpoch)
	want.LastSeen = confEpoch.Add(time.Second)
	plain := &contexts.Session{ID: "s2", ContextID: "c1", Principal: "bob", Transport: "http", CreatedAt: confEpoch, LastSeen: confEpoch}
	confOpen(t, a, want)
	confOpen(t, b, plain)
	for name, st := range map[string]contexts.Store{"same handle": a, "other handle": b} {
		confSameSess(t, "GetSession through the "+name, confGetSess(t, st, "s1"), want)
		confSameSess(t, "GetSession of a session without elicitation through the "+name, confGetSess(t, st, "s2"), plain)
	}
	if _, err := b.OpenSession(ctx, confSession("s1", "c2", "mallory", confEpoch), 0, 0); !errors.Is(err, contexts.ErrExists) {
		t.Errorf("OpenSession of a stored id: %v, want ErrExists", err)
	}
	confSameSess(t, "after a refused OpenSession", confGetSess(t, a, "s1"), want)
	if _, err := b.GetSession(ctx, "missing"); !errors.Is(err, contexts.ErrNotFound) {
		t.Errorf("GetSession(missing): %v, want ErrNotFound", err)
	}
	got := confGetSess(t, a, "s1")
	got.Principal, got.LastSeen = "evil", time.Time{}
	confSameSess(t, "after changing what GetSession returned", confGetSess(t, a, "s1"), want)
}

func confTouchAndClose(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	s := confSession("s1", "c1", "alice", confEpoch)
	confOpen(t, a, s)
	later := confEpoch.Add(time.Minute)
	if err := b.TouchSession(ctx, "s1", later); err != nil {
		t.Fatalf("TouchSession through the other handle: %v", err)
	}
	s.LastSeen = later
	confSameSess(t, "after TouchSession", confGetSess(t, a, "s1"), s)
	if err := a.TouchSession(ctx, "missing", later); !errors.Is(err, contexts.ErrNotFound) {
		t.Errorf("TouchSession(missing): %v, want ErrNotFound", err)
	}

	closedAt := confEpoch.Add(2 * time.Minute)
	if was, err := a.CloseSession(ctx, "s1", "client went away", closedAt); err != nil || !was {
		t.Fatalf("CloseSession of an open session: %v, %v; want true", was, err)
	}
	s.ClosedAt, s.CloseReason = closedAt, "client went away"
	confSameSess(t, "after CloseSession", confGetSess(t, b, "s1"), s)
	if s.Open(closedAt, 0) {
		t.Error("Session.Open reports a closed session open")
	}
	// Closing again, from either handle, changes nothing and says so; so
	// does closing a session never stored.
	for name, st := range map[string]contexts.Store{"same handle": a, "other handle": b} {
		if was, err := st.CloseSession(ctx, "s1", "again", closedAt.Add(time.Hour)); err != nil || was {
			t.Errorf("second CloseSession through the %s: %v, %v; want false, nil", name, was, err)
		}
	}
	if was, err := a.CloseSession(ctx, "missing", "x", closedAt); err != nil || was {
		t.Errorf("CloseSession(missing): %v, %v; want false, nil", was, err)
	}
	if err := b.TouchSession(ctx, "s1", closedAt.Add(time.Hour)); !errors.Is(err, contexts.ErrNotFound) {
		t.Errorf("TouchSession of a closed session: %v, want ErrNotFound", err)
	}
	confSameSess(t, "after closing again and touching", confGetSess(t, a, "s1"), s)
}

// confEvicted renders what OpenSession evicted: ids in order, each
// checked closed at closedAt with EvictReason, and closed so in the store.
func confEvicted(t *testing.T, st contexts.Store, evicted []*contexts.Session, closedAt time.Time) string {
	t.Helper()
	ids := ""
	for _, e := range evicted {
		ids += e.ID
		for what, got := range map[string]*contexts.Session{"returned": e, "stored": confGetSess(t, st, e.ID)} {
			if !got.ClosedAt.Equal(closedAt) || got.CloseReason != contexts.EvictReason {
				t.Errorf("evicted session %s as %s: closed at %v for %q; want %v for %q", e.ID, what, got.ClosedAt, got.CloseReason, closedAt, contexts.EvictReason)
			}
		}
	}
	return ids
}

// confSessionCap: at the cap, a new session evicts the principal's least
// recently used one over the same transport, through either handle;
// another principal, another transport and an uncapped open are not
// counted; a lowered cap evicts as many as it takes.
func confSessionCap(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	at := confEpoch
	open := func(st contexts.Store, id, principal, transport string, maxOpen int) string {
		t.Helper()
		at = at.Add(time.Second)
		s := confSession(id, "c1", principal, at)
		s.Transport = transport
		evicted, err := st.OpenSession(ctx, s, maxOpen, 0)
		if err != nil {
			t.Fatalf("OpenSession(%s) under a cap of %d: %v", id, maxOpen, err)
		}
		return confEvicted(t, st, evicted, at)
	}
	const web = "streamable-http"
	for _, id := range []string{"1", "2"} {
		if ev := open(a, id, "alice", web, 2); ev != "" {
			t.Fatalf("session %s under a cap of 2 evicted %q", id, ev)
		}
	}
	// 1 is used after 2 was opened: 2 is now the least recently used.
	if err := b.TouchSession(ctx, "1", at.Add(time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if ev := open(b, "3", "alice", web, 2); ev != "2" {
		t.Errorf("a third session under a cap of 2 evicted %q, want the least recently used %q", ev, "2")
	}
	if ev := open(a, "4", "bob", web, 2); ev != "" {
		t.Errorf("another principal's session evicted %q; the cap is per principal", ev)
	}
	if ev := open(b, "5", "alice", "sse", 2); ev != "" {
		t.Errorf("alice's SSE session evicted %q; the cap counts one transport's sessions", ev)
	}
	if ev := open(a, "6", "alice", web, 0); ev != "" {
		t.Errorf("a session with no cap evicted %q", ev)
	}
	// alice holds 1, 3 and 6 over web: a cap of 2 makes room by closing
	// the two least recently used.
	if ev := open(b, "7", "alice", web, 2); ev != "13" {
		t.Errorf("under a lowered cap: evicted %q, want %q", ev, "13")
	}
	if got := confSessionIDs(t, a, "c1", true); got != "4567" {
		t.Errorf("open sessions %q, want %q", got, "4567")
	}
	// A stored id is ErrExists and evicts nothing.
	dup := confSession("7", "c1", "alice", at.Add(time.Second))
	dup.Transport = web
	if _, err := a.OpenSession(ctx, dup, 1, 0); !errors.Is(err, contexts.ErrExists) {
		t.Errorf("OpenSession of a stored id at the cap: %v, want ErrExists", err)
	}
	if got := confSessionIDs(t, b, "c1", true); got != "4567" {
		t.Errorf("after a refused OpenSession: open sessions %q, want %q", got, "4567")
	}
}

// confSessionCapIdle: with an idle timeout, a session not seen within it
// of the new session's CreatedAt neither counts nor is evicted; the
// boundary is Session.Open's.
func confSessionCapIdle(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	const idle = 10 * time.Minute
	now := confEpoch.Add(time.Hour)
	for _, c := range []struct {
		id   string
		seen time.Duration // before now
		live bool
	}{
		{"stale", 20 * time.Minute, false},
		{"edge", idle, false},
		{"live", 5 * time.Minute, true},
	} {
		s := confSession(c.id, "c1", "alice", confEpoch)
		s.LastSeen = now.Add(-c.seen)
		if s.Open(now, idle) != c.live {
			t.Fatalf("Session.Open(%s) = %v, want %v", c.id, !c.live, c.live)
		}
		confOpen(t, a, s)
	}
	// Only "live" counts: one more fits under 2 without an eviction, the
	// next evicts "live", the least recently used of the live ones.
	evicted, err := b.OpenSession(ctx, confSession("n1", "c1", "alice", now), 2, idle)
	if err != nil || len(evicted) != 0 {
		t.Errorf("a session beside one live and two idle ones under a cap of 2: evicted %d, %v; want none", len(evicted), err)
	}
	evicted, err = a.OpenSession(ctx, confSession("n2", "c1", "alice", now), 2, idle)
	if err != nil {
		t.Fatal(err)
	}
	if ev := confEvicted(t, a, evicted, now); ev != "live" {
		t.Errorf("third live session under a cap of 2 evicted %q, want %q", ev, "live")
	}
	for _, id := range []string{"stale", "edge"} {
		if got := confGetSess(t, b, id); !got.ClosedAt.IsZero() {
			t.Errorf("idle session %s was closed by the cap: %s", id, confSessJSON(got))
		}
	}
	// Without an idle timeout every session not closed counts: stale,
	// edge, n1 and n2 under a cap of 4 make room for a fifth by evicting
	// the least recently seen.
	evicted, err = b.OpenSession(ctx, confSession("n3", "c1", "alice", now), 4, 0)
	if err != nil {
		t.Fatal(err)
	}
	if ev := confEvicted(t, b, evicted, now); ev != "stale" {
		t.Errorf("a fifth session under a cap of 4 and no idle timeout evicted %q, want %q", ev, "stale")
	}
}

// confSessionCapConcurrent: the count, the evictions and the insert are
// one atomic step, across handles: of many callers racing under a cap of
// 3 every one opens its session, each eviction is reported once, and 3
// stay open.
func confSessionCapConcurrent(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	const perHandle, maxOpen = 8, 3
	var mu sync.Mutex
	evicted := map[string]int{}
	won := raceHandles(t, a, b, 2*perHandle, contexts.ErrExists, func(i int, st contexts.Store) error {
		s := confSession(fmt.Sprintf("s%02d", i), "c1", "alice", confEpoch.Add(time.Duration(i)*time.Millisecond))
		ev, err := st.OpenSession(ctx, s, maxOpen, time.Hour)
		mu.Lock()
		defer mu.Unlock()
		for _, e := range ev {
			evicted[e.ID]++
		}
		return err
	})
	if won != 2*perHandle {
		t.Errorf("%d of %d racing sessions opened under a cap of %d", won, 2*perHandle, maxOpen)
	}
	list, err := b.ListSessions(ctx, "", true)
	if err != nil || len(list) != maxOpen {
		t.Errorf("after the race: %d open sessions, %v; want %d", len(list), err, maxOpen)
	}
	for id, n := range evicted {
		if n != 1 {
			t.Errorf("session %s reported evicted %d times", id, n)
		}
	}
	if len(evicted) != 2*perHandle-maxOpen {
		t.Errorf("%d sessions reported evicted, want %d", len(evicted), 2*perHandle-maxOpen)
	}
}

func confCloseIdleSessions(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	now := confEpoch.Add(time.Hour)
	idleBefore := now.Add(-15 * time.Minute)
	for i, c := range []struct {
		id     string
		seen   time.Time
		closed bool
	}{
		{"b", now.Add(-30 * time.Minute), false},
		{"a", now.Add(-time.Hour), false},
		{"c", now, false},
		{"d", now.Add(-2 * time.Hour), true},
		{"e", idleBefore, false}, // not before idleBefore
	} {
		s := confSession(c.id, "c1", "alice", confEpoch.Add(time.Duration(c.id[0])*time.Second))
		s.LastSeen = c.seen
		if c.closed {
			s.ClosedAt, s.CloseReason = c.seen, "earlier"
		}
		confOpen(t, [2]contexts.Store{a, b}[i%2], s)
	}
	closed, err := b.CloseIdleSessions(ctx, idleBefore, now, "idle")
	if err != nil {
		t.Fatal(err)
	}
	ids := ""
	for _, s := range closed {
		ids += s.ID
		stored := confGetSess(t, a, s.ID)
		confSameSess(t, "returned by CloseIdleSessions", s, stored)
		if !stored.ClosedAt.Equal(now) || stored.CloseReason != "idle" {
			t.Errorf("%s stored as closed at %v for %q, want %v for %q", s.ID, stored.ClosedAt, stored.CloseReason, now, "idle")
		}
	}
	if ids != "ab" {
		t.Errorf("CloseIdleSessions closed %q, want %q", ids, "ab")
	}
	if d := confGetSess(t, a, "d"); d.CloseReason != "earlier" {
		t.Errorf("an already closed session was closed again: %s", confSessJSON(d))
	}
	if got := confSessionIDs(t, b, "c1", true); got != "ce" {
		t.Errorf("open after the sweep: %q, want %q", got, "ce")
	}
	again, err := a.CloseIdleSessions(ctx, idleBefore, now.Add(time.Minute), "idle")
	if err != nil || len(again) != 0 {
		t.Errorf("a second sweep: %d sessions, %v; want none", len(again), err)
	}
}

func confListSessions(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	for i, c := range []struct {
		id, contextID string
		created       time.Duration
	}{
		{"d", "c2", 3}, {"b", "c1", 1}, {"e", "c2", 4}, {"a", "c1", 0}, {"c", "c1", 2},
	} {
		confOpen(t, [2]contexts.Store{a, b}[i%2], confSession(c.id, c.contextID, "alice", confEpoch.Add(c.created*time.Second)))
	}
	if _, err := a.CloseSession(ctx, "b", "done", confEpoch.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		contextID string
		openOnly  bool
		want      string
	}{
		{"", false, "abcde"},
		{"", true, "acde"},
		{"c1", false, "abc"},
		{"c1", true, "ac"},
		{"c3", false, ""},
	} {
		for name, st := range map[string]contexts.Store{"same handle": a, "other handle": b} {
			if got := confSessionIDs(t, st, c.contextID, c.openOnly); got != c.want {
				t.Errorf("ListSessions(%q, %v) through the %s: %q, want %q", c.contextID, c.openOnly, name, got, c.want)
			}
		}
	}
}

func confUsageValue(t *testing.T, st contexts.Store, key string) []byte {
	t.Helper()
	v, err := st.Usage(context.Background(), key)
	if err != nil {
		t.Fatalf("Usage(%s): %v", key, err)
	}
	return v
}

func confUsage(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	if v := confUsageValue(t, a, "calls:alice"); v != nil {
		t.Errorf("Usage of a missing key: %q, want nil", v)
	}
	var kept []byte
	err := a.UpdateUsage(ctx, []string{"calls:alice", "bytes:alice"}, func(cur map[string][]byte) (map[string][]byte, error) {
		if len(cur) != 0 {
			t.Errorf("fn got %q for keys never stored, want an empty map", cur)
		}
		kept = []byte(`{"n":1}`)
		return map[string][]byte{"calls:alice": kept}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	kept[0] = 'X' // the store must have copied it
	for name, st := range map[string]contexts.Store{"same handle": a, "other handle": b} {
		if v := confUsageValue(t, st, "calls:alice"); string(v) != `{"n":1}` {
			t.Errorf("Usage through the %s: %q, want %q", name, v, `{"n":1}`)
		}
	}
	got := confUsageValue(t, a, "calls:alice")
	got[0] = 'X'

	// fn sees exactly the stored keys it asked for; a failing fn stores
	// nothing, even of what it changed in place, and its error comes back
	// unchanged.
	boom := errors.New("boom")
	err = b.UpdateUsage(ctx, []string{"calls:alice", "bytes:alice"}, func(cur map[string][]byte) (map[string][]byte, error) {
		if len(cur) != 1 || string(cur["calls:alice"]) != `{"n":1}` {
			t.Errorf("fn got %q, want only calls:alice", cur)
		}
		cur["calls:alice"][0] = 'X'
		return map[string][]byte{"calls:alice": []byte("2"), "other": []byte("3")}, boom
	})
	if err != boom {
		t.Errorf("UpdateUsage with a failing fn: %v, want the fn error itself", err)
	}
	if v := confUsageValue(t, a, "calls:alice"); string(v) != `{"n":1}` {
		t.Errorf("after a failing fn: %q, want %q", v, `{"n":1}`)
	}
	if v := confUsageValue(t, b, "other"); v != nil {
		t.Errorf("a failing fn stored %q", v)
	}

	// Values fn returns under keys it did not read are stored too.
	err = b.UpdateUsage(ctx, []string{"calls:alice"}, func(cur map[string][]byte) (map[string][]byte, error) {
		cur["calls:alice"][0] = 'X' // fn's own copy
		return map[string][]byte{"window:alice": []byte("w")}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"calls:alice": `{"n":1}`, "window:alice": "w"} {
		if v := confUsageValue(t, a, key); string(v) != want {
			t.Errorf("Usage(%s): %q, want %q", key, v, want)
		}
	}
}

// confUsageConcurrent: counters incremented from both handles at once lose
// no update, and the keys of one call change together.
func confUsageConcurrent(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	const perHandle = 50
	keys := []string{"calls", "pair"}
	racetest.Go(2*perHandle, func(i int) {
		st := [2]contexts.Store{a, b}[i%2]
		err := st.UpdateUsage(ctx, keys, func(cur map[string][]byte) (map[string][]byte, error) {
			calls, _ := strconv.Atoi(string(cur["calls"]))
			pair, _ := strconv.Atoi(string(cur["pair"]))
			if calls != pair {
				return nil, fmt.Errorf("calls %d and pair %d differ: an update was half applied", calls, pair)
			}
			next := []byte(strconv.Itoa(calls + 1))
			return map[string][]byte{"calls": next, "pair": next}, nil
		})
		if err != nil {
			t.Errorf("caller %d: %v", i, err)
		}
	})
	for _, key := range keys {
		if v := confUsageValue(t, b, key); string(v) != strconv.Itoa(2*perHandle) {
			t.Errorf("%s after %d increments: %q (an update was lost)", key, 2*perHandle, v)
		}
	}
}

func confUseChallenge(t *testing.T, a, b contexts.Store) {
	ctx := context.Background()
	// Expiries are real times: a store may forget nonces past theirs.
	expires := time.Now().Add(time.Hour)
	if err := a.UseChallenge(ctx, "n1", expires); err != nil {
		t.Fatal(err)
	}
	for name, st := range map[string]contexts.Store{"same handle": a, "other handle": b} {
		if err := st.UseChallenge(ctx, "n1", expires); !errors.Is(err, contexts.ErrReplayed) {
			t.Errorf("replay through the %s: %v, want ErrReplayed", name, err)
		}
	}
	if err := b.UseChallenge(ctx, "n2", expires); err != nil {
		t.Errorf("another nonce: %v", err)
	}

	const perHandle = 8
	won := raceHandles(t, a, b, 2*perHandle, contexts.ErrReplayed, func(_ int, st contexts.Store) error {
		return st.UseChallenge(ctx, "n3", expires)
	})
	if won != 1 {
		t.Errorf("%d of %d racing uses of one nonce succeeded, want 1", won, 2*perHandle)
	}
}

// raceHandles runs call n times at once, alternately through a and b, and
// returns how many calls succeeded; a call failing with anything but lost
// (the error of a caller that lost the race) fails the test.
func raceHandles(t *testing.T, a, b contexts.Store, n int, lost error, call func(i int, st contexts.Store) error) (won int) {
	t.Helper()
	return racetest.Won(t, n, lost, func(i int) error { return call(i, [2]contexts.Store{a, b}[i%2]) })
}

// confContextCanceled: with a done context every method fails with its
// error, runs no callback and stores nothing.
func confContextCanceled(t *testing.T, a, _ contexts.Store) {
	bg := context.Background()
	confCreateCtx(t, a, confContext("c1", "alice", confEpoch))
	confOpen(t, a, confSession("s1", "c1", "alice", confEpoch))
	ctx, cancel := context.WithCancel(bg)
	cancel()
	calls := map[string]func() error{
		"EnsureContext": func() error { _, err := a.EnsureContext(ctx, confContext("c2", "alice", confEpoch)); return err },
		"CreateContext": func() error { return a.CreateContext(ctx, confContext("c2", "alice", confEpoch)) },
		"GetContext":    func() error { _, err := a.GetContext(ctx, "c1"); return err },
		"UpdateContext": func() error {
			_, err := a.UpdateContext(ctx, "c1", func(*contexts.Context) error { t.Error("mutate ran"); return nil })
			return err
		},
		"ListContexts": func() error { _, err := a.ListContexts(ctx, ""); return err },
		"OpenSession": func() error {
			_, err := a.OpenSession(ctx, confSession("s2", "c1", "alice", confEpoch), 5, 0)
			return err
		},
		"GetSession":   func() error { _, err := a.GetSession(ctx, "s1"); return err },
		"TouchSession": func() error { return a.TouchSession(ctx, "s1", confEpoch.Add(time.Hour)) },
		"CloseSession": func() error { _, err := a.CloseSession(ctx, "s1", "x", confEpoch.Add(time.Hour)); return err },
		"CloseIdleSessions": func() error {
			_, err := a.CloseIdleSessions(ctx, confEpoch.Add(time.Hour), confEpoch.Add(time.Hour), "x")
			return err
		},
		"ListSessions": func() error { _, err := a.ListSessions(ctx, "", false); return err },
		"UpdateUsage": func() error {
			return a.UpdateUsage(ctx, []string{"k"}, func(map[string][]byte) (map[string][]byte, error) {
				t.Error("fn ran")
				return map[string][]byte{"k": []byte("1")}, nil
			})
		},
		"Usage":        func() error { _, err := a.Usage(ctx, "k"); return err },
		"UseChallenge": func() error { return a.UseChallenge(ctx, "n1", time.Now().Add(time.Hour)) },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: %v, want context.Canceled", name, err)
		}
	}
	if _, err := a.GetContext(bg, "c2"); !errors.Is(err, contexts.ErrNotFound) {
		t.Errorf("a canceled call stored context c2: %v", err)
	}
	if _, err := a.GetSession(bg, "s2"); !errors.Is(err, contexts.ErrNotFound) {
		t.Errorf("a canceled call stored session s2: %v", err)
	}
	confSameSess(t, "session after canceled calls", confGetSess(t, a, "s1"), confSession("s1", "c1", "alice", confEpoch))
	if v, err := a.Usage(bg, "k"); err != nil || v != nil {
		t.Errorf("a canceled UpdateUsage stored %q, %v", v, err)
	}
	if err := a.UseChallenge(bg, "n1", time.Now().Add(time.Hour)); err != nil {
		t.Errorf("a nonce first used with a canceled context is spent: %v", err)
	}
}
