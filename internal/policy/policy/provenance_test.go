package policy

import (
	"errors"
	"strings"
	"testing"
)

// provenancePolicy is how an author writes provenance rules for a
// payment tool behind an upstream: a recipient must come from the task or
// an endorsement, an untrusted amount needs approval, and a body whose
// readers do not include the recipient may not leave.
func provenancePolicy(t testing.TB) *Policy {
	return mustCompile(t, Spec{
		Allow: []string{"mcp.bank.*"},
		Rules: []RuleSpec{
			{ID: "recipient-untrusted", Capability: "mcp.bank.send_money", Effect: Deny,
				When: `provenance.recipient.origin == "untrusted"`},
			{ID: "recipient-not-principal", Capability: "mcp.bank.send_money", Effect: RequireApproval,
				When: `provenance.recipient.origin not in ["trusted", "endorsed"]`},
			{ID: "any-untrusted", Capability: "mcp.bank.*", Effect: RequireApproval,
				When: `len(untrusted_args) > 0`},
			{ID: "body-readers", Capability: "mcp.bank.message", Effect: Deny,
				When: `!provenance.body.public && !(args.parameters.arguments.to in provenance.body.readers)`},
			{ID: "plain", Capability: "mcp.bank.message", Effect: RequireApproval, When: `args.parameters.arguments.to == "x"`},
		},
	})
}

func TestDecideOverProvenance(t *testing.T) {
	p := provenancePolicy(t)
	args := func(to string) map[string]any {
		return map[string]any{"parameters": map[string]any{"arguments": map[string]any{"to": to}}}
	}
	tests := []struct {
		name   string
		cap    string
		args   map[string]any
		prov   map[string]ArgProvenance
		effect Effect
		rule   string
	}{
		{"recipient from the task", "mcp.bank.send_money", nil,
			map[string]ArgProvenance{"recipient": {Origin: OriginTrusted, Sources: []string{"task"}}}, Allow, "allow:mcp.bank.*"},
		{"recipient endorsed", "mcp.bank.send_money", nil,
			map[string]ArgProvenance{"recipient": {Origin: OriginEndorsed}}, Allow, "allow:mcp.bank.*"},
		{"recipient from a fetched page", "mcp.bank.send_money", nil,
			map[string]ArgProvenance{"recipient": {Origin: OriginUntrusted, Sources: []string{"att_1"}}}, Deny, "recipient-untrusted"},
		{"recipient written by the agent", "mcp.bank.send_money", nil,
			map[string]ArgProvenance{"recipient": {Origin: OriginAgent}}, RequireApproval, "recipient-not-principal"},
		// Nothing traced (no provenance at all): the missing key is the
		// zero value, not an error; the rule that needs a trusted value
		// holds, so it fails closed to approval, never to a spurious
		// evaluation-error deny.
		{"nothing traced", "mcp.bank.send_money", nil, nil, RequireApproval, "recipient-not-principal"},
		{"untrusted amount", "mcp.bank.get_balance", nil,
			map[string]ArgProvenance{"amount": {Origin: OriginUntrusted}}, RequireApproval, "any-untrusted"},
		{"no untrusted argument", "mcp.bank.get_balance", nil,
			map[string]ArgProvenance{"amount": {Origin: OriginAgent}}, Allow, "allow:mcp.bank.*"},
		{"body readable by the recipient", "mcp.bank.message", args("bob"),
			map[string]ArgProvenance{"body": {Origin: OriginTrusted, Readers: []string{"alice", "bob"}}}, Allow, "allow:mcp.bank.*"},
		{"body not readable by the recipient", "mcp.bank.message", args("eve"),
			map[string]ArgProvenance{"body": {Origin: OriginTrusted, Readers: []string{"alice", "bob"}}}, Deny, "body-readers"},
		{"public body", "mcp.bank.message", args("eve"),
			map[string]ArgProvenance{"body": {Origin: OriginUntrusted}}, RequireApproval, "any-untrusted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := p.Decide(&Input{Capability: tc.cap, Args: tc.args, Provenance: tc.prov})
			if d.Effect != tc.effect || d.RuleID != tc.rule {
				t.Fatalf("got %s by %s (%s), want %s by %s", d.Effect, d.RuleID, d.Reason, tc.effect, tc.rule)
			}
		})
	}
}

func TestUsesProvenance(t *testing.T) {
	p := provenancePolicy(t)
	for id, want := range map[string]bool{"recipient-untrusted": true, "any-untrusted": true, "body-readers": true,
		"plain": false, "allow:mcp.bank.*": false, "nope": false} {
		if got := p.UsesProvenance(id); got != want {
			t.Errorf("UsesProvenance(%q) = %v, want %v", id, got, want)
		}
	}
}

// TestProvenanceCompileChecked: a misspelt provenance field or helper
// stops the load, like any unknown identifier.
func TestProvenanceCompileChecked(t *testing.T) {
	for _, when := range []string{
		`provenance.recipient.orign == "untrusted"`,
		`untrusted_arg == []`,
		`provenance.recipient == "untrusted"`,
		`len(provenance.recipient.sources) > "x"`,
	} {
		_, err := Compile(Spec{Allow: []string{"mcp.*"}, Rules: []RuleSpec{{ID: "r", Capability: "mcp.*", Effect: Deny, When: when}}})
		if !errors.Is(err, ErrExpression) {
			t.Errorf("%s: %v, want ErrExpression", when, err)
		}
	}
}

func TestExplainShowsProvenance(t *testing.T) {
	p := provenancePolicy(t)
	in := &Input{Capability: "mcp.bank.send_money", Provenance: map[string]ArgProvenance{
		"recipient": {Origin: OriginUntrusted, Sources: []string{"att_9"}, Kind: "iban"}}}
	ex := Explain(p, in)
	if ex.Decision.RuleID != "recipient-untrusted" || ex.Provenance["recipient"].Origin != OriginUntrusted {
		t.Fatalf("explanation %+v", ex)
	}
	var used bool
	for _, s := range ex.Steps {
		if s.ID == "recipient-untrusted" {
			used = s.UsesProvenance && s.Matched
		}
	}
	if !used {
		t.Fatalf("the deciding rule is not marked as reading provenance: %+v", ex.Steps)
	}
	out := ex.String()
	for _, want := range []string{"provenance:", "recipient", "untrusted", "att_9", "kind iban", "[reads provenance]"} {
		if !strings.Contains(out, want) {
			t.Errorf("explanation lacks %q:\n%s", want, out)
		}
	}
}

func TestCaseStatesProvenance(t *testing.T) {
	in, err := ParseCall([]byte(`{"capability":"mcp.bank.send_money","provenance":{"recipient":{"origin":"untrusted","sources":["att_1"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if d := provenancePolicy(t).Decide(in); d.RuleID != "recipient-untrusted" {
		t.Fatalf("got %+v", d)
	}
	if _, err := ParseCall([]byte(`{"capability":"x","provenance":{"recipient":{"origin":"mine"}}}`)); !errors.Is(err, ErrInvalidCase) {
		t.Fatalf("unknown origin: %v", err)
	}
}
