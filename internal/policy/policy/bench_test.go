package policy

import (
	"fmt"
	"testing"
	"time"
)

// hundredRules builds a policy with 100 rules over 10 capabilities, with
// conditions of the shapes authors write: argument comparisons, URL host
// checks, phase and role tests, time of day.
func hundredRules(tb testing.TB) *Policy {
	tb.Helper()
	spec := Spec{Allow: []string{"pool.*", "comm.*", "pipeline.run:*"}, Deny: []string{"pipeline.run:danger_*"}}
	conds := []string{
		`(args.limit ?? 0) > %d`,
		`url.host endsWith ".example%d.org"`,
		`phase == "execution" && role != "r%d"`,
		`now.Hour() < %d`,
		`"x%d" in (args.tags ?? [])`,
	}
	for i := range 100 {
		cap := fmt.Sprintf("cap%d.op", i%10)
		eff := []Effect{Allow, RequireApproval, Deny}[i%3]
		if eff == Deny {
			eff = Allow // keep every rule evaluated: a true deny would stop the walk
		}
		spec.Rules = append(spec.Rules, RuleSpec{
			ID: fmt.Sprintf("r%03d", i), Capability: cap, Effect: eff,
			When: fmt.Sprintf(conds[i%len(conds)], i+1000000),
		})
		if i < 10 {
			spec.Allow = append(spec.Allow, cap)
		}
	}
	p, err := Compile(spec)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// BenchmarkDecide100Rules decides a call against a 100-rule policy. Ten
// rules match the call's capability and are evaluated; ns/rule is the time
// per evaluated rule (goal ≤ 1µs) and allocs/op must not grow with b.N.
func BenchmarkDecide100Rules(b *testing.B) {
	p := hundredRules(b)
	in := &Input{
		Tool: "t", Capability: "cap3.op", Phase: "execution", Role: "analyst",
		Args: map[string]any{"limit": float64(10), "url": "https://docs.example.org/a", "tags": []any{"a", "b"}},
		Now:  time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC),
	}
	evaluated := 0
	for _, l := range p.layers {
		for _, r := range l.rules {
			if r.cap.Match(in.Capability) {
				evaluated++
			}
		}
	}
	if d := p.Decide(in); d.Effect == Deny {
		b.Fatalf("benchmark call is denied: %+v", d)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p.Decide(in)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(evaluated), "ns/rule")
	b.ReportMetric(float64(evaluated), "rules/op")
}

// BenchmarkDecidePatterns is the common case: a pattern-only policy.
func BenchmarkDecidePatterns(b *testing.B) {
	p, err := Compile(Spec{Allow: []string{"pool.*", "comm.fetch", "pipeline.run:*"}, Deny: []string{"pipeline.run:danger_*", "comm.query"}})
	if err != nil {
		b.Fatal(err)
	}
	in := &Input{Capability: "pipeline.run:report_daily"}
	b.ReportAllocs()
	for b.Loop() {
		p.Decide(in)
	}
}
