package contexts

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// lineage is a fake PolicyLineage: child → parent edges.
type lineage map[string]string

func (l lineage) Extends(child, parent string) bool {
	for n, seen := child, 0; n != "" && seen <= len(l); n, seen = l[n], seen+1 {
		if n == parent {
			return true
		}
	}
	return false
}

func TestFakeLineage(t *testing.T) {
	l := lineage{"strict": "base", "stricter": "strict"}
	for _, tc := range []struct {
		child, parent string
		want          bool
	}{
		{"base", "base", true}, {"strict", "base", true}, {"stricter", "base", true},
		{"base", "strict", false}, {"other", "base", false}, {"other", "other", true},
	} {
		if got := l.Extends(tc.child, tc.parent); got != tc.want {
			t.Errorf("Extends(%s, %s) = %v", tc.child, tc.parent, got)
		}
	}
}

func TestCheckRestricts(t *testing.T) {
	policies := lineage{"strict": "base", "stricter": "strict", "other": ""}
	parent := &Context{
		ID: "ctx_parent", Principal: "alice", Role: "analyst",
		Policy: "base", Phase: PhaseExecution, Pools: []string{"docs", "crm", "mail"},
	}
	planning := parent.Clone()
	planning.Phase = PhasePlanning
	child := func(f func(c *Context)) *Context {
		c := &Context{
			ID: "ctx_child", Parent: "ctx_parent", Principal: "alice", Role: "analyst",
			Policy: "base", Phase: PhaseExecution, Pools: []string{"crm", "docs"},
		}
		f(c)
		return c
	}
	tests := []struct {
		name   string
		parent *Context
		child  *Context
		want   error // nil = allowed
		msg    string
	}{
		{"subset pools, same policy", parent, child(func(*Context) {}), nil, ""},
		{"same pools", parent, child(func(c *Context) { c.Pools = []string{"mail", "crm", "docs"} }), nil, ""},
		{"no pools", parent, child(func(c *Context) { c.Pools = nil }), nil, ""},
		{"policy extends the parent's", parent, child(func(c *Context) { c.Policy = "strict" }), nil, ""},
		{"policy extends it indirectly", parent, child(func(c *Context) { c.Policy = "stricter" }), nil, ""},
		{"planning under execution", parent, child(func(c *Context) { c.Phase = PhasePlanning }), nil, ""},
		{"planning under planning", planning, child(func(c *Context) { c.Phase = PhasePlanning }), nil, ""},
		{"env and metadata are free", parent, child(func(c *Context) {
			c.Env = map[string]string{"REGION": "eu"}
			c.CreatedBy = "operator"
			c.PolicyVersion = "abc"
		}), nil, ""},

		{"other principal", parent, child(func(c *Context) { c.Principal = "mallory" }), ErrWidens, "principal"},
		{"other role", parent, child(func(c *Context) { c.Role = "admin" }), ErrWidens, "role"},
		{"pool not in the parent", parent, child(func(c *Context) { c.Pools = []string{"docs", "hr"} }), ErrWidens, `"hr"`},
		{"pool differing in case", parent, child(func(c *Context) { c.Pools = []string{"Docs"} }), ErrWidens, "pool"},
		{"unrelated policy", parent, child(func(c *Context) { c.Policy = "other" }), ErrWidens, "policy"},
		{"unknown policy", parent, child(func(c *Context) { c.Policy = "nope" }), ErrWidens, "policy"},
		{"parent's policy under a child policy", &Context{
			ID: "ctx_parent", Principal: "alice", Role: "analyst", Policy: "strict", Phase: PhaseExecution,
		}, child(func(c *Context) { c.Policy = "base"; c.Pools = nil }), ErrWidens, "policy"},
		{"execution under planning", planning, child(func(*Context) {}), ErrWidens, "execution"},

		{"empty phase", parent, child(func(c *Context) { c.Phase = "" }), ErrInvalid, "phase"},
		{"unknown phase", parent, child(func(c *Context) { c.Phase = "Execution" }), ErrInvalid, "phase"},
		{"wrong parent id", parent, child(func(c *Context) { c.Parent = "ctx_else" }), ErrInvalid, "parent"},
		{"no parent id", parent, child(func(c *Context) { c.Parent = "" }), ErrInvalid, "parent"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.child.Clone()
			err := CheckRestricts(tc.parent, tc.child, policies)
			if !reflect.DeepEqual(before, tc.child) {
				t.Fatal("CheckRestricts modified the child")
			}
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			other := ErrInvalid
			if tc.want == ErrInvalid {
				other = ErrWidens
			}
			if errors.Is(err, other) {
				t.Fatalf("err = %v is also %v", err, other)
			}
			if !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), tc.child.ID) {
				t.Fatalf("err = %q, want it to name %s and mention %q", err, tc.child.ID, tc.msg)
			}
		})
	}
}

// TestDefaultID: default context ids are deterministic, ctx_ and 24 hex
// digits, distinct for every principal and role (issue 26 item 11: one
// principal's two roles never share one) and from every legacy id.
func TestDefaultID(t *testing.T) {
	principal, role := "alice", "agent"
	if a, b := DefaultID(principal, role), DefaultID("alice", "agent"); a != b {
		t.Fatalf("DefaultID is not deterministic: %s, %s", a, b)
	}
	if a, b := LegacyDefaultID(principal), LegacyDefaultID("alice"); a != b {
		t.Fatalf("LegacyDefaultID is not deterministic: %s, %s", a, b)
	}
	seen := map[string]string{}
	check := func(name, id string) {
		t.Helper()
		if !strings.HasPrefix(id, "ctx_") || len(id) != len("ctx_")+24 {
			t.Errorf("%s = %q, want ctx_ and 24 hex digits", name, id)
		}
		if strings.Trim(id[len("ctx_"):], "0123456789abcdef") != "" {
			t.Errorf("%s = %q is not hex after the prefix", name, id)
		}
		if q, dup := seen[id]; dup {
			t.Errorf("%s = %s = %s", name, q, id)
		}
		seen[id] = name
	}
	for _, p := range []string{"alice", "bob", "Alice", "alice ", "", "alice\x00", "alice\x00agent", "a", "b"} {
		for _, r := range []string{"agent", "admin", "", "\x00agent", "agent\x00"} {
			check(fmt.Sprintf("DefaultID(%q, %q)", p, r), DefaultID(p, r))
		}
		check(fmt.Sprintf("LegacyDefaultID(%q)", p), LegacyDefaultID(p))
	}
}

func TestSessionOpen(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	open := Session{ID: "s1", LastSeen: t0}
	closed := Session{ID: "s2", LastSeen: t0, ClosedAt: t0.Add(time.Second), CloseReason: "client closed"}
	tests := []struct {
		name string
		s    Session
		now  time.Time
		idle time.Duration
		want bool
	}{
		{"open, no timeout", open, t0.Add(365 * 24 * time.Hour), 0, true},
		{"open, negative timeout means none", open, t0.Add(time.Hour), -time.Second, true},
		{"open, seen just now", open, t0, time.Minute, true},
		{"open, within idle", open, t0.Add(time.Minute - time.Nanosecond), time.Minute, true},
		{"open, idle exactly", open, t0.Add(time.Minute), time.Minute, false},
		{"open, past idle", open, t0.Add(time.Hour), time.Minute, false},
		{"open, clock behind last seen", open, t0.Add(-time.Hour), time.Minute, true},
		{"closed, no timeout", closed, t0, 0, false},
		{"closed, within idle", closed, t0, time.Hour, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.s.Open(tc.now, tc.idle); got != tc.want {
				t.Fatalf("Open(%v, %v) = %v, want %v", tc.now.Sub(t0), tc.idle, got, tc.want)
			}
		})
	}
}

func TestContextClone(t *testing.T) {
	orig := &Context{
		ID: "ctx_1", Parent: "ctx_0", Principal: "alice", Role: "analyst",
		Policy: "base", PolicyVersion: "v1", Phase: PhasePlanning,
		Pools:     []string{"docs", "crm"},
		Env:       map[string]string{"REGION": "eu"},
		CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), CreatedBy: "op",
	}
	c := orig.Clone()
	if !reflect.DeepEqual(c, orig) || c == orig {
		t.Fatalf("Clone = %+v, want an equal copy", c)
	}
	c.Pools[0] = "hr"
	c.Pools = append(c.Pools, "mail")
	c.Env["REGION"] = "us"
	c.Env["NEW"] = "x"
	c.Phase = PhaseExecution
	if !slices.Equal(orig.Pools, []string{"docs", "crm"}) || len(orig.Env) != 1 || orig.Env["REGION"] != "eu" || orig.Phase != PhasePlanning {
		t.Fatalf("mutating the clone changed the original: %+v", orig)
	}
	// Spare capacity in the original's slice is not shared either.
	spare := &Context{Pools: make([]string, 1, 8)}
	sc := spare.Clone()
	sc.Pools = append(sc.Pools, "x")
	if got := spare.Pools[:2]; got[1] != "" {
		t.Fatalf("append to the clone wrote into the original's array: %q", got)
	}

	if (*Context)(nil).Clone() != nil {
		t.Fatal("nil.Clone() != nil")
	}
	empty := (&Context{}).Clone()
	if empty.Env != nil || empty.Pools != nil {
		t.Fatalf("clone of an empty context = %+v, want nil Env and Pools", empty)
	}
	if !(&Context{}).IsDefault() || orig.IsDefault() {
		t.Fatal("IsDefault")
	}
}
