package policy_test

import (
	"fmt"
	"net/url"

	"github.com/airlock-dev/airlock/internal/policy/policy"
)

func ExampleCompile() {
	p, err := policy.Compile(policy.Spec{
		Allow: []string{"pool.*", "pipeline.run:*"},
		Deny:  []string{"pipeline.run:danger_*"},
		Rules: []policy.RuleSpec{{
			ID: "big-reads-need-ok", Capability: "pool.read",
			When: "(args.limit ?? 0) > 500000", Effect: policy.RequireApproval,
		}},
	})
	if err != nil {
		panic(err)
	}
	for _, in := range []*policy.Input{
		{Capability: "pool.read", Args: map[string]any{"limit": 1000.0}},
		{Capability: "pool.read", Args: map[string]any{"limit": 900000.0}},
		{Capability: "pool.read", Args: map[string]any{"limit": "lots"}},
		{Capability: "pipeline.run:danger_wipe"},
		{Capability: "comm.fetch"},
	} {
		d := p.Decide(in)
		fmt.Printf("%-24s %-16s %s\n", in.Capability, d.Effect, d.RuleID)
	}
	// Output:
	// pool.read                allow            allow:pool.*
	// pool.read                require_approval big-reads-need-ok
	// pool.read                deny             big-reads-need-ok
	// pipeline.run:danger_wipe deny             deny:pipeline.run:danger_*
	// comm.fetch               deny             default
}

func ExampleCompileSet() {
	src := []byte(`policies:
  base:
    allow: [pool.*, comm.search]
  agent:
    extends: base
    allow: [pool.read, comm.fetch]
`)
	specs, err := policy.DecodePolicies("airlock.yaml", src)
	if err != nil {
		panic(err)
	}
	_, err = policy.CompileSet("airlock.yaml", src, specs)
	fmt.Println(err)
	// Output:
	// airlock.yaml:6:24: $.policies.agent.allow[1]: "comm.fetch" is not within any allow of parent "base" (allows pool.*, comm.search): child policy widens its parent
}

func ExampleExplain() {
	p, err := policy.Compile(policy.Spec{
		Allow: []string{"comm.search"},
		Rules: []policy.RuleSpec{
			{ID: "docs", Capability: "comm.fetch", When: `url.host endsWith ".example.org"`, Effect: policy.Allow},
			{ID: "planning", Capability: "comm.*", When: `phase != "execution"`, Effect: policy.Deny},
		},
		Network: policy.NetworkSpec{AllowHosts: []string{"*.example.org"}},
	})
	if err != nil {
		panic(err)
	}
	ex := policy.Explain(p, &policy.Input{
		Capability: "comm.fetch", Phase: "execution",
		Args: map[string]any{"url": "https://docs.example.org/guide"},
	})
	fmt.Println(ex.Decision.Effect, ex.Decision.RuleID)
	for _, s := range ex.Steps {
		fmt.Printf("%-13s %-12s matched=%-5v %s\n", s.Kind, s.ID, s.Matched, s.Why)
	}
	// Output:
	// allow docs
	// allow-pattern allow:comm.search matched=false "comm.search" does not match "comm.fetch"
	// network       network      matched=false URL https://docs.example.org/guide is allowed by the network section
	// rule          docs         matched=true  condition true: url.host endsWith ".example.org"
	// rule          planning     matched=false condition false: phase != "execution"
}

func ExampleRunCases() {
	s, err := policy.LoadFile("../../../testdata/policy/example.yaml")
	if err != nil {
		panic(err)
	}
	rep, err := policy.RunCases(s, "../../../testdata/policy/failing_cases.yaml", nil)
	if err != nil {
		panic(err)
	}
	fmt.Print(rep)
	// Output:
	// ../../../testdata/policy/failing_cases.yaml:8: FAIL "wrong effect" (policy base): want allow, got deny by default: no allow pattern or allow rule of policy "base" matches the capability
	// ../../../testdata/policy/failing_cases.yaml:11: FAIL "wrong rule" (policy base): want require_approval by some-other-rule, got require_approval by big-reads-need-ok: rule "big-reads-need-ok" of policy "base" matched: (args.limit ?? 0) > 500000 (large reads are reviewed by an operator)
	// FAIL: 1/3 cases passed
}

func ExamplePolicy_CheckURL() {
	p, err := policy.Compile(policy.Spec{Network: policy.NetworkSpec{
		AllowHosts: []string{"*.example.org"},
		DenyHosts:  []string{"evil.example.org"},
	}})
	if err != nil {
		panic(err)
	}
	for _, raw := range []string{
		"https://docs.example.org/a",
		"https://evil.example.org/",
		"http://docs.example.org/",
		"https://169.254.169.254/latest/meta-data",
	} {
		u, _ := url.Parse(raw)
		fmt.Println(raw, "->", p.CheckURL(u))
	}
	// Output:
	// https://docs.example.org/a -> <nil>
	// https://evil.example.org/ -> host "evil.example.org" matches network.deny_hosts "evil.example.org": network access denied by policy
	// http://docs.example.org/ -> scheme "http" is not in network.allow_schemes [https]: network access denied by policy
	// https://169.254.169.254/latest/meta-data -> address 169.254.169.254 is private, loopback or link-local and not in network.allow_private: network access denied by policy
}
