package policy

import (
	"net/url"
	"testing"
)

// listableSrc has a base that allows an upstream's tools with conditions,
// and a child that narrows it (issue 15's per-caller catalog).
const listableSrc = `
policies:
  base:
    allow: ["mcp.up.*", "comm.fetch"]
    deny: ["mcp.up.drop"]
    rules:
      - {id: gated, capability: mcp.up.gated, effect: require_approval}
      - {id: cond, capability: mcp.up.cond, when: 'args.parameters.arguments.a > 1', effect: deny}
    network: {allow_hosts: ["mcp.example.org"], allow_schemes: [https]}
  child:
    extends: base
    allow: ["mcp.up.echo", "mcp.up.gated"]
  ruled:
    allow: ["pool.*"]
    rules:
      - {id: only-small, capability: mcp.up.small, when: 'args.parameters.arguments.n < 5', effect: allow}
`

// TestListable: a capability is listable unless the chain denies it
// outright (a deny pattern, or a policy with no allow pattern and no allow
// rule for it) or, for an HTTP upstream, the network section refuses its
// URL; conditions are never evaluated (they depend on the call), so a
// tool behind a condition or an approval is listable.
func TestListable(t *testing.T) {
	set, err := loadString(t, listableSrc)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := url.Parse("https://mcp.example.org/mcp")
	other, _ := url.Parse("https://evil.example/mcp")
	plain, _ := url.Parse("http://mcp.example.org/mcp")
	for _, tc := range []struct {
		policy, capability string
		u                  *url.URL
		want               bool
	}{
		{"base", "mcp.up.echo", nil, true},
		{"base", "mcp.up.drop", nil, false},  // deny pattern
		{"base", "mcp.up.gated", nil, true},  // require_approval: listed
		{"base", "mcp.up.cond", nil, true},   // a condition on arguments: listed
		{"base", "mcp.other.x", nil, false},  // no allow
		{"child", "mcp.up.echo", nil, true},  // allowed by both
		{"child", "mcp.up.cond", nil, false}, // the child does not allow it
		{"child", "mcp.up.drop", nil, false}, // the parent's deny holds
		{"ruled", "mcp.up.small", nil, true}, // an allow rule may allow it
		{"ruled", "mcp.up.big", nil, false},
		{"base", "mcp.up.echo", good, true},
		{"base", "mcp.up.echo", other, false}, // host not in allow_hosts
		{"base", "mcp.up.echo", plain, false}, // scheme not allowed
		{"child", "mcp.up.echo", other, false},
	} {
		p, ok := set.Get(tc.policy)
		if !ok {
			t.Fatalf("no policy %s", tc.policy)
		}
		if got := p.Listable(tc.capability, tc.u); got != tc.want {
			t.Errorf("%s: Listable(%s, %v) = %v, want %v", tc.policy, tc.capability, tc.u, got, tc.want)
		}
	}
	var none *Policy
	if none.Listable("mcp.up.echo", nil) {
		t.Error("a nil policy lists a tool")
	}
}

// TestDecideMCPNetwork: an mcp.* call naming a URL (the runner passes an
// HTTP upstream's) is judged by the network section exactly as a comm.*
// call is: same rule id (network), same deny. Without a URL (a stdio
// upstream) the section does not apply.
func TestDecideMCPNetwork(t *testing.T) {
	set, err := loadString(t, listableSrc)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := set.Get("base")
	for _, tc := range []struct {
		capability, url string
		effect          Effect
		rule            string
	}{
		{"mcp.up.echo", "https://mcp.example.org/mcp", Allow, "allow:mcp.up.*"},
		{"mcp.up.echo", "https://evil.example/mcp", Deny, "network"},
		{"mcp.up.echo", "http://127.0.0.1:8080/mcp", Deny, "network"},
		{"comm.fetch", "http://127.0.0.1:8080/mcp", Deny, "network"},
		{"mcp.up.echo", "", Allow, "allow:mcp.up.*"},
	} {
		d := p.Decide(&Input{Capability: tc.capability, Tool: "declare_need", URL: tc.url})
		if d.Effect != tc.effect || d.RuleID != tc.rule {
			t.Errorf("%s %q: %s %s (%s), want %s %s", tc.capability, tc.url, d.Effect, d.RuleID, d.Reason, tc.effect, tc.rule)
		}
		ex := Explain(p, &Input{Capability: tc.capability, Tool: "declare_need", URL: tc.url})
		if ex.Decision.Effect != d.Effect {
			t.Errorf("explain %s %q: %s, decide %s", tc.capability, tc.url, ex.Decision.Effect, d.Effect)
		}
	}
}
