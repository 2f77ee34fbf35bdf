package contexts

import (
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
