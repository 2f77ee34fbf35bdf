package policy

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

const parentYAML = `
policies:
  base:
    allow: [pool.*, comm.search, pipeline.run:*]
    rules:
      - { id: fetch-docs, capability: comm.fetch, when: 'url.host endsWith ".example.org"', effect: allow }
    network:
      allow_hosts: ["*.example.org", api.test]
      allow_schemes: [https, http]
      allow_private: [10.0.0.0/8]
    filesystem: { read: [pools, /data], write: [out] }
    limits:
      max_actions: 100
      max_total_cost: 10
      costs: { comm.fetch: 1 }
      rate: { "comm.*": { per_minute: 10, burst: 5 } }
`

func TestInheritanceRefusals(t *testing.T) {
	tests := []struct {
		name  string
		child string // YAML of policies.child, indented by four spaces
		line  int
		msg   string
	}{
		{"allow outside parent", "allow: [pool.*, comm.query]", 19, `"comm.query"`},
		{"allow wider than parent", "allow: [comm.*]", 19, `"comm.*"`},
		{"pipeline wider", "allow: [pipeline.*]", 19, ""},
		{"allow rule outside parent", "rules: [{ id: q, capability: comm.query, effect: allow }]", 19, "allow rule"},
		{"host outside parent", "network: { allow_hosts: [example.org] }", 19, "allow_hosts"},
		{"wildcard host wider", "network: { allow_hosts: [\"*.org\"] }", 19, "allow_hosts"},
		{"scheme outside parent", "network: { allow_schemes: [ftp] }", 19, "schemes"},
		{"private outside parent", "network: { allow_private: [10.0.0.0/7] }", 19, "allow_private"},
		{"read outside parent", "filesystem: { read: [pools2] }", 19, "read"},
		{"write outside parent", "filesystem: { write: [/] }", 19, "write"},
		{"more actions", "limits: { max_actions: 101 }", 19, "max_actions"},
		{"bigger budget", "limits: { max_total_cost: 11 }", 19, "max_total_cost"},
		{"cheaper fetch", "limits: { costs: { comm.fetch: 0.5 } }", 19, "costs"},
		{"faster rate", "limits: { rate: { \"comm.*\": { per_minute: 11 } } }", 19, "per_minute"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := parentYAML + "  child:\n    extends: base\n    " + tc.child + "\n"
			_, err := loadString(t, src)
			wantLine(t, err, tc.line, ErrWidens)
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err %v does not mention %q", err, tc.msg)
			}
		})
	}
}

func TestInheritanceRefusalLine(t *testing.T) {
	// The error points at the offending element, not the policy.
	_, err := loadString(t, parentYAML+`  child:
    extends: base
    allow:
      - pool.read
      - pipeline.run:report_*
      - comm.query
`)
	wantLine(t, err, 22, ErrWidens)
}

func TestInheritanceStructure(t *testing.T) {
	wantLoadErrors(t, []lineCase{
		{"unknown parent", "policies:\n  a:\n    extends: nope\n", 3, ErrUnknownParent},
		{"self cycle", "policies:\n  a:\n    extends: a\n", 3, ErrCycle},
		{"cycle", "policies:\n  a:\n    extends: b\n  b:\n    extends: c\n  c:\n    extends: a\n", 3, ErrCycle},
	})
}

func TestInheritanceAccepted(t *testing.T) {
	s, err := loadString(t, parentYAML+`
  narrow:
    extends: base
    allow: [pool.read, pipeline.run:report_*, comm.fetch]
    deny: [pool.secret]
    rules:
      - { id: no-night, capability: "*", when: 'now.Hour() < 6', effect: deny }
    network: { allow_hosts: [docs.example.org, "*.api.example.org"], deny_hosts: [x.example.org], allow_schemes: [https], allow_private: [10.1.0.0/16] }
    filesystem: { read: [pools/sales], write: [out/reports] }
    limits: { max_actions: 10, costs: { comm.fetch: 2, comm.search: 1 }, rate: { "comm.*": { per_minute: 1, burst: 1 }, pool.read: { per_minute: 60 } } }
  grandchild:
    extends: narrow
    deny: [comm.*]
`)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Names(), ","); got != "base,grandchild,narrow" {
		t.Fatalf("Names = %s", got)
	}
	g, _ := s.Get("grandchild")
	if got := strings.Join(g.Chain(), ">"); got != "base>narrow>grandchild" {
		t.Fatalf("Chain = %s", got)
	}
	l := g.Limits()
	if l.MaxActions != 10 || l.MaxTotalCost != 10 || l.Costs["comm.fetch"] != 2 || l.Rate["pool.read"].PerMinute != 60 {
		t.Fatalf("merged limits = %+v", l)
	}
	n, _ := s.Get("narrow")
	if err := n.CheckRead("pools/other/x"); err == nil {
		t.Fatal("narrow reads outside its read list")
	}
	if err := n.CheckRead("pools/sales/x.csv"); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Get("missing"); ok {
		t.Fatal("Get of a missing policy")
	}
}

// TestChildNeverWidens is the property inheritance promises: for any
// input, a child's decision is at least as strict as its parent's.
func TestChildNeverWidens(t *testing.T) {
	for _, file := range []string{"../../../testdata/policy/example.yaml", "testdata/roles.yaml"} {
		t.Run(file, func(t *testing.T) { childNeverWidens(t, file) })
	}
}

func childNeverWidens(t *testing.T, file string) {
	s, err := LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rank := map[Effect]int{Allow: 0, RequireApproval: 1, Deny: 2}
	caps := []string{"pool.read", "pool.list", "comm.fetch", "comm.search", "comm.query", "pipeline.run:report_a", "pipeline.run:report_quarterly", "pipeline.run:x", "pipeline.run:danger_x", "other"}
	urls := []string{"", "https://docs.example.org/", "https://www.example.org/", "http://docs.example.org/", "https://evil.example.org/", "https://api.weather.test/"}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range s.Names() {
		child, _ := s.Get(name)
		chain := child.Chain()
		if len(chain) < 2 {
			continue
		}
		parent, _ := s.Get(chain[len(chain)-2])
		for range 2000 {
			in := &Input{
				Capability: caps[rng.IntN(len(caps))],
				Phase:      []string{"planning", "execution"}[rng.IntN(2)],
				Principal:  []string{"alice", "bob"}[rng.IntN(2)],
				Now:        DefaultCaseTime.Add(rngHours(rng)),
				Args: map[string]any{"url": urls[rng.IntN(len(urls))], "limit": float64(rng.IntN(1_000_000)),
					"query": strings.Repeat("q", rng.IntN(400))},
			}
			pd, cd := parent.Decide(in), child.Decide(in)
			if rank[cd.Effect] < rank[pd.Effect] {
				t.Fatalf("%s widens %s for %+v: parent %s by %s, child %s by %s", name, parent.Name(), in, pd.Effect, pd.RuleID, cd.Effect, cd.RuleID)
			}
		}
	}
}

func rngHours(r *rand.Rand) time.Duration { return time.Duration(r.IntN(24*7)) * time.Hour }

func TestNeutralChildInheritsAllows(t *testing.T) {
	s, err := loadString(t, `
policies:
  base: { allow: [pool.*] }
  child: { extends: base, deny: [pool.write] }
`)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.Get("child")
	for cap, want := range map[string]Effect{"pool.read": Allow, "pool.write": Deny, "comm.fetch": Deny} {
		if d := c.Decide(&Input{Capability: cap}); d.Effect != want {
			t.Errorf("%s: %s by %s, want %s", cap, d.Effect, d.RuleID, want)
		}
	}
}

func TestParentConditionStaysInChild(t *testing.T) {
	// The parent allows comm.fetch only for docs hosts; a child that lists
	// comm.fetch as a plain allow is accepted (it is within the parent's
	// allow rule) but does not drop the parent's condition.
	s, err := loadString(t, `
policies:
  base:
    rules: [{ id: docs, capability: comm.fetch, when: 'url.host == "docs.test"', effect: allow }]
    network: { allow_hosts: ["*"] }
  child: { extends: base, allow: [comm.fetch] }
`)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := s.Get("child")
	for u, want := range map[string]Effect{"https://docs.test/": Allow, "https://other.test/": Deny} {
		if d := c.Decide(&Input{Capability: "comm.fetch", Args: map[string]any{"url": u}}); d.Effect != want {
			t.Errorf("%s: %s by %s, want %s", u, d.Effect, d.RuleID, want)
		}
	}
}

func TestDeepChain(t *testing.T) {
	// Chains deeper than the fixed arrays in Decide still decide correctly.
	var b strings.Builder
	b.WriteString("policies:\n  p0: { allow: [pool.*, comm.fetch] }\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "  p%d: { extends: p%d, allow: [pool.*, comm.fetch] }\n", i, i-1)
	}
	fmt.Fprintf(&b, "  p13: { extends: p12, rules: [{ id: r, capability: pool.read, when: 'args.ok == true', effect: allow }] }\n")
	s, err := loadString(t, b.String())
	if err != nil {
		t.Fatal(err)
	}
	p, _ := s.Get("p13")
	if d := p.Decide(&Input{Capability: "pool.read", Args: map[string]any{"ok": true}}); d.Effect != Allow || d.RuleID != "r" {
		t.Fatalf("got %+v", d)
	}
	if d := p.Decide(&Input{Capability: "pool.read"}); d.Effect != Deny {
		t.Fatalf("got %+v", d)
	}
	if d := p.Decide(&Input{Capability: "comm.fetch"}); d.Effect != Deny {
		t.Fatalf("p13 has allows of its own and none for comm.fetch: %+v", d)
	}
}
