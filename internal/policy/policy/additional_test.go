package policy

import (
	"errors"
	"slices"
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
	caps := []string{"mcp.search.query", "mcp.search.other", "mcp.crm.lookup", "mcp.crm.update"}
	for name, optedIn := range map[string][]string{
		"root":         {"mcp.search.query", "mcp.search.other", "mcp.crm.lookup"},
		"narrow":       {"mcp.search.query"},
		"silent":       {"mcp.search.query", "mcp.search.other", "mcp.crm.lookup"},
		"under-narrow": {"mcp.search.query"},
		"none":         nil,
	} {
		p, ok := set.Get(name)
		if !ok {
			t.Fatalf("no policy %s", name)
		}
		for _, c := range caps {
			if got := p.AdditionalArguments(c); got != slices.Contains(optedIn, c) {
				t.Errorf("%s: %s = %v", name, c, got)
			}
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
