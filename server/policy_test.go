package server

import (
	"testing"

	"github.com/airlock-dev/airlock/internal/policy/policy"
)

// TestLiveDecisionMatchesExplain: what a policy author sees from
// `airlock policy explain` is what the live server decides and records.
func TestLiveDecisionMatchesExplain(t *testing.T) {
	f := newFixture(t, "ruled")
	c := f.connect(t)
	set, err := policy.LoadFile(f.cfg.File())
	must(t, err)
	p, _ := set.Get("ruled")
	tests := []struct {
		args map[string]any
		code string
	}{
		{map[string]any{"pool": "alpha", "path": "hello.txt"}, ""},
		{map[string]any{"pool": "alpha", "path": "image.png"}, "POLICY_DENIED"},
		{map[string]any{"pool": "alpha", "path": "hello.txt", "limit": 5000}, "APPROVAL_REQUIRED"},
	}
	for _, tc := range tests {
		res := call(t, c, "read_pool_file", tc.args)
		if got := code(res); got != tc.code {
			t.Fatalf("%v: code %q, want %q (%s)", tc.args, got, tc.code, text(res))
		}
		recs := f.auditRecords(t)
		live := recs[len(recs)-1]
		ex := policy.Explain(p, &policy.Input{Tool: "read_pool_file", Capability: "pool.read", Tier: "read", Phase: "planning", Args: tc.args})
		if live.RuleID != ex.Decision.RuleID || live.Decision != string(ex.Decision.Effect) {
			t.Fatalf("%v: live %s/%s, explain %s/%s", tc.args, live.Decision, live.RuleID, ex.Decision.Effect, ex.Decision.RuleID)
		}
	}
}
