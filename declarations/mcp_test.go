package declarations_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/declarations"
)

func mcpNeed(upstream, tool, args string) declarations.Need {
	n := declarations.Need{Operation: declarations.OpMCP, Parameters: declarations.Parameters{Upstream: upstream, Tool: tool},
		Justification: declarations.Justification{UserRequest: "u", MissingKnowledge: "m", ExpectedUse: "e"}}
	if args != "" {
		n.Parameters.Arguments = json.RawMessage(args)
	}
	return n
}

// TestValidateMCP: the comm.mcp rules (see validateMCP) and the canonical
// arguments the fingerprint, the policy and the upstream share.
func TestValidateMCP(t *testing.T) {
	for _, tc := range []struct {
		name, upstream, tool, args, field string
	}{
		{"ok", "everything", "echo", `{"message":"hi"}`, ""},
		{"no arguments", "everything", "get-env", ``, ""},
		{"dotted tool", "everything", "a.b", `{}`, "parameters.tool"},
		{"dotted upstream", "every.thing", "echo", `{}`, "parameters.upstream"},
		{"upper upstream", "Everything", "echo", `{}`, "parameters.upstream"},
		{"missing tool", "everything", "", `{}`, "parameters.tool"},
		{"duplicate key", "everything", "echo", `{"message":"a","message":"b"}`, "parameters.arguments"},
		{"array", "everything", "echo", `[1]`, "parameters.arguments"},
		{"too deep", "everything", "echo", strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40), "parameters.arguments"},
		{"too long", "everything", "echo", `{"m":"` + strings.Repeat("a", declarations.MaxArgumentsBytes) + `"}`, "parameters.arguments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := mcpNeed(tc.upstream, tc.tool, tc.args)
			err := n.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *declarations.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !errors.Is(err, declarations.ErrInvalid) {
				t.Fatalf("%v, want a FieldError for %s", err, tc.field)
			}
		})
	}
	// A fetch need may not smuggle comm.mcp fields the approver never sees.
	f := declarations.Need{Operation: declarations.OpFetch, Parameters: declarations.Parameters{URL: "https://example.com/", Tool: "echo"},
		Justification: declarations.Justification{UserRequest: "u", MissingKnowledge: "m", ExpectedUse: "e"}}
	if err := f.Validate(); err == nil {
		t.Fatal("comm.fetch with a tool accepted")
	}
	// Canonical: key order and spacing do not change the fingerprint.
	a, b := mcpNeed("e", "echo", `{"b":1, "a":{"y":2,"x":"<&>"}}`), mcpNeed("e", "echo", `{"a":{"x":"<&>","y":2},"b":1}`)
	if a.Validate() != nil || b.Validate() != nil || a.Fingerprint() != b.Fingerprint() || string(a.Parameters.Arguments) != `{"a":{"x":"<&>","y":2},"b":1}` {
		t.Fatalf("not canonical: %s / %s", a.Parameters.Arguments, b.Parameters.Arguments)
	}
}

// FuzzCanonicalArguments: no panic, only FieldErrors, and canonical
// arguments are a fixed point.
func FuzzCanonicalArguments(f *testing.F) {
	for _, s := range []string{`{"message":"hi"}`, `{"a":1,"a":2}`, `[]`, `{"n":1.0e3,"s":"\u0000"}`, `null`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := declarations.CanonicalArguments(json.RawMessage(s))
		if err != nil {
			var fe *declarations.FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		again, err := declarations.CanonicalArguments(c)
		if err != nil || string(again) != string(c) {
			t.Fatalf("canonical form not stable: %s -> %s (%v)", c, again, err)
		}
	})
}
