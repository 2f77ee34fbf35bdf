package policy

import "testing"

// TestReadableBy: readable_by lets content go only to its readers: public
// content (or an argument not traced) to anyone; restricted content to a
// recipient, or a list of recipients, all of whom are readers, ASCII case
// aside; a look-alike address, a missing or non-string recipient, or an
// empty readers list (nobody) is refused. The rule reads provenance, so
// its deny is a provenance refusal.
func TestReadableBy(t *testing.T) {
	p := mustCompile(t, Spec{
		Allow: []string{"mcp.mail.*"},
		Rules: []RuleSpec{{ID: "body-not-for-recipient", Capability: "mcp.mail.send", Effect: Deny,
			When: `!readable_by(provenance.body, args.parameters.arguments.to)`}},
	})
	alice := []string{"alice@corp.example"}
	args := func(to any) map[string]any {
		return map[string]any{"parameters": map[string]any{"arguments": map[string]any{"to": to}}}
	}
	for _, tc := range []struct {
		name    string
		to      any
		readers []string
		traced  bool
		want    Effect
	}{
		{"public body to anyone", "bob@else.example", nil, true, Allow},
		{"body not traced", "bob@else.example", nil, false, Allow},
		{"reader", "alice@corp.example", alice, true, Allow},
		{"reader in other case", "Alice@CORP.example", alice, true, Allow},
		{"not a reader", "bob@else.example", alice, true, Deny},
		{"look-alike reader", "\u0430lice@corp.example", alice, true, Deny},
		{"kelvin sign", "\u212Aim@corp.example", []string{"kim@corp.example"}, true, Deny},
		{"reader with a suffix", "alice@corp.example.evil", alice, true, Deny},
		{"list of readers", []any{"alice@corp.example", "carol@corp.example"}, []string{"alice@corp.example", "carol@corp.example"}, true, Allow},
		{"list with an outsider", []any{"alice@corp.example", "bob@else.example"}, alice, true, Deny},
		{"empty list", []any{}, alice, true, Deny},
		{"non-string", 42.0, alice, true, Deny},
		{"missing recipient", nil, alice, true, Deny},
		{"nobody may read", "alice@corp.example", []string{}, true, Deny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &Input{Capability: "mcp.mail.send", Args: args(tc.to)}
			if tc.traced {
				in.Provenance = map[string]ArgProvenance{"body": {Origin: OriginUntrusted, Readers: tc.readers}}
			}
			d := p.Decide(in)
			if d.Effect != tc.want {
				t.Fatalf("%s (%s), want %s", d.Effect, d.Reason, tc.want)
			}
			if d.Effect == Deny && !p.UsesProvenance(d.RuleID) {
				t.Fatalf("rule %s does not count as a provenance rule", d.RuleID)
			}
		})
	}
}
