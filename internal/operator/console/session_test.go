package console

import (
	"testing"
	"time"
)

func TestSessions(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ss := newSessions()
	id := ss.create("admin/env:A", "cred", now, time.Minute)
	if len(id) != 43 {
		t.Fatalf("id %q: want 256 bits base64url", id)
	}
	for k := range ss.m {
		if string(k[:]) == id {
			t.Fatal("the id itself is the key")
		}
	}
	if s, ok := ss.get(id, now.Add(59*time.Second)); !ok || s.principal != "admin/env:A" || s.credential != "cred" || len(s.csrf) != 43 {
		t.Fatalf("live session: %+v %v", s, ok)
	}
	if _, ok := ss.get(id, now.Add(time.Minute)); ok {
		t.Fatal("an expired session is live")
	}
	if len(ss.m) != 0 {
		t.Fatal("an expired session is kept")
	}
	// At the bound the session closest to expiry makes room.
	first := ss.create("p", "c", now, time.Second)
	for i := 1; i < maxSessions; i++ {
		ss.create("p", "c", now, time.Hour)
	}
	last := ss.create("p", "c", now, time.Hour)
	if _, ok := ss.get(first, now); ok || len(ss.m) != maxSessions {
		t.Fatalf("bound: %d sessions, first still there: %v", len(ss.m), ok)
	}
	if _, ok := ss.get(last, now); !ok {
		t.Fatal("the newest session was evicted")
	}
	ss.remove(last)
	if _, ok := ss.get(last, now); ok {
		t.Fatal("removed session is live")
	}
}

func TestTokensEqual(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{{"x", "x", true}, {"x", "y", false}, {"", "", false}, {"x", "", false}, {"", "x", false}, {"xy", "x", false}} {
		if got := tokensEqual(tc.a, tc.b); got != tc.want {
			t.Errorf("tokensEqual(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}
