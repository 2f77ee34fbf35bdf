package contexts

import (
	"context"
	"errors"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// TestBindingAdmit: a context serves a call only for its principal and
// role, and, under a bound credential, only if it is the bound context or
// under it; a credential that requires a context never runs in a default
// one (issue 26 items 2 and 11).
func TestBindingAdmit(t *testing.T) {
	def := &Context{ID: "ctx_default", Principal: "alice", Role: "agent"}
	child := &Context{ID: "ctx_child", Parent: def.ID, Principal: "alice", Role: "agent"}
	grand := &Context{ID: "ctx_grand", Parent: child.ID, Principal: "alice", Role: "agent"}
	sibling := &Context{ID: "ctx_sibling", Parent: def.ID, Principal: "alice", Role: "agent"}
	chainOf := func(cs ...*Context) []*Context { return cs }
	tests := []struct {
		name    string
		bind    Binding
		chain   []*Context
		who     string
		role    string
		code    violation.Code
		because error
	}{
		{"unbound, default", Binding{}, chainOf(def), "alice", "agent", "", nil},
		{"unbound, child", Binding{}, chainOf(child, def), "alice", "agent", "", nil},
		{"another principal's", Binding{}, chainOf(child, def), "mallory", "agent", violation.ContextInvalid, ErrForeign},
		{"another role's", Binding{}, chainOf(def), "alice", "admin", violation.ContextInvalid, ErrOtherRole},
		{"bound, the bound context", Binding{Context: child.ID}, chainOf(child, def), "alice", "agent", "", nil},
		{"bound, under it", Binding{Context: child.ID}, chainOf(grand, child, def), "alice", "agent", "", nil},
		{"bound, its parent", Binding{Context: child.ID}, chainOf(def), "alice", "agent", violation.ContextOutsideBinding, ErrOutsideBinding},
		{"bound, a sibling", Binding{Context: child.ID}, chainOf(sibling, def), "alice", "agent", violation.ContextOutsideBinding, ErrOutsideBinding},
		{"required, default", Binding{Required: true}, chainOf(def), "alice", "agent", violation.ContextRequired, ErrContextRequired},
		{"required, child", Binding{Required: true}, chainOf(sibling, def), "alice", "agent", "", nil},
		{"bound and required, bound child", Binding{Context: child.ID, Required: true}, chainOf(child, def), "alice", "agent", "", nil},
		{"nothing resolved", Binding{}, nil, "alice", "agent", violation.ContextInvalid, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.bind.Admit(tc.chain, tc.who, tc.role)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if c, ok := violation.CodeOf(err); !ok || c != tc.code {
				t.Fatalf("err = %v, want code %s", err, tc.code)
			}
			if tc.because != nil && !errors.Is(err, tc.because) {
				t.Fatalf("err = %v, want it to wrap %v", err, tc.because)
			}
		})
	}
}

func TestBindingString(t *testing.T) {
	forms := map[string]Binding{}
	for _, b := range []Binding{{}, {Context: "ctx_a"}, {Required: true}, {Context: "ctx_a", Required: true}, {Context: "ctx_b"}} {
		if prev, dup := forms[b.String()]; dup {
			t.Errorf("%+v and %+v share the form %q", prev, b, b.String())
		}
		forms[b.String()] = b
	}
	if !(Binding{}).IsZero() || (Binding{Required: true}).IsZero() {
		t.Error("IsZero")
	}
}

// getter is a map of contexts by id, as a Store's GetContext reads them.
type getter map[string]*Context

func (g getter) GetContext(_ context.Context, id string) (*Context, error) {
	if c, ok := g[id]; ok {
		return c, nil
	}
	return nil, ErrNotFound
}

// TestLoadDefault: the default context of a principal and role is the one
// DefaultID names; a context from before default contexts were keyed by
// role serves the role it belongs to (an upgrade loses no phase, usage or
// declaration) and no other role (issue 26 item 11).
func TestLoadDefault(t *testing.T) {
	keyed := &Context{ID: DefaultID("alice", "agent"), Principal: "alice", Role: "agent"}
	legacyAgent := &Context{ID: LegacyDefaultID("alice"), Principal: "alice", Role: "agent"}
	legacyAdmin := &Context{ID: LegacyDefaultID("alice"), Principal: "alice", Role: "admin"}
	tests := []struct {
		name   string
		stored getter
		want   *Context // nil: ErrNotFound
	}{
		{"none yet", getter{}, nil},
		{"keyed", getter{keyed.ID: keyed}, keyed},
		{"legacy of this role", getter{legacyAgent.ID: legacyAgent}, legacyAgent},
		{"legacy of another role", getter{legacyAdmin.ID: legacyAdmin}, nil},
		{"keyed beside legacy", getter{keyed.ID: keyed, legacyAgent.ID: legacyAgent}, keyed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, id, err := LoadDefault(context.Background(), tc.stored, "alice", "agent")
			if tc.want == nil {
				if !errors.Is(err, ErrNotFound) || id != DefaultID("alice", "agent") {
					t.Fatalf("got %v, %q, %v; want ErrNotFound and the keyed id to create", got, id, err)
				}
				return
			}
			if err != nil || got != tc.want || id != tc.want.ID {
				t.Fatalf("got %v, %q, %v; want %s", got, id, err, tc.want.ID)
			}
		})
	}
}
