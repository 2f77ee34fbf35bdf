package policy

import (
	"errors"
	"strings"
	"testing"
)

const additionalSrc = `
policies:
  root:
    allow: ["mcp.*"]
    mcp_additional_arguments: ["mcp.search.*", "mcp.crm.lookup"]
  narrow:
    extends: root
    mcp_additional_arguments: ["mcp.search.query"]
  silent:
    extends: root
  under-narrow:
    extends: narrow
  none:
    allow: ["mcp.*"]
`

// TestAdditionalArguments (issue 26, item 1): the opt-in for argument keys
// a pinned schema does not name holds where the root lists a matching
// pattern and every descendant that lists any does too; a policy that
// lists none defers to its parent, and a root that lists none opts in to
// nothing.
func TestAdditionalArguments(t *testing.T) {
	set, err := loadString(t, additionalSrc)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		policy, capability string
		want               bool
	}{
		{"root", "mcp.search.query", true},
		{"root", "mcp.search.other", true},
		{"root", "mcp.crm.lookup", true},
		{"root", "mcp.crm.update", false},
		{"narrow", "mcp.search.query", true},
		{"narrow", "mcp.search.other", false},
		{"narrow", "mcp.crm.lookup", false},
		{"silent", "mcp.crm.lookup", true},
		{"under-narrow", "mcp.search.query", true},
		{"under-narrow", "mcp.search.other", false},
		{"none", "mcp.search.query", false},
	} {
		p, ok := set.Get(tc.policy)
		if !ok {
			t.Fatalf("no policy %s", tc.policy)
		}
		if got := p.AdditionalArguments(tc.capability); got != tc.want {
			t.Errorf("%s: %s = %v, want %v", tc.policy, tc.capability, got, tc.want)
		}
	}
	var nilPolicy *Policy
	if nilPolicy.AdditionalArguments("mcp.search.query") {
		t.Error("a nil policy opted in")
	}
}

// TestAdditionalArgumentsRefusals: a child cannot widen the opt-in, nor
// introduce one its ancestors never made, and only mcp.* patterns take it.
func TestAdditionalArgumentsRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      error
		msg       string
	}{
		{"wider child", "  root:\n    allow: [\"mcp.*\"]\n    mcp_additional_arguments: [\"mcp.a.b\"]\n  child:\n    extends: root\n    mcp_additional_arguments: [\"mcp.a.*\"]\n", ErrWidens, `"mcp.a.*"`},
		{"introduced by a child", "  root:\n    allow: [\"mcp.*\"]\n  child:\n    extends: root\n    mcp_additional_arguments: [\"mcp.a.b\"]\n", ErrWidens, "mcp_additional_arguments"},
		{"not mcp", "  root:\n    allow: [\"*\"]\n    mcp_additional_arguments: [\"comm.fetch\"]\n", ErrInvalidPattern, "only mcp.*"},
		{"bare prefix", "  root:\n    allow: [\"*\"]\n    mcp_additional_arguments: [\"mcp.\"]\n", ErrInvalidPattern, "only mcp.*"},
		{"bad pattern", "  root:\n    allow: [\"*\"]\n    mcp_additional_arguments: [\"mcp.**\"]\n", ErrInvalidPattern, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadString(t, "policies:\n"+tc.src)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want %v with %q", err, tc.want, tc.msg)
			}
		})
	}
}
