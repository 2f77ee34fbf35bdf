package policy

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestUnreachableRules: a rule is reported when Decide can never reach it
// — a deny pattern of its chain covers it, or a policy of its chain that
// is not neutral allows none of what it matches — and never otherwise
// (issue 24 item 7: a require_approval on a capability nothing allows
// passed check and read as "needs a person").
func TestUnreachableRules(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       []string // policy/rule ids reported
		line       string   // where the first is reported
		why        string
	}{
		{"approval on a capability nothing allows", `policies:
  base:
    allow: [pool.*]
    rules:
      - {id: fetch-needs-ok, capability: comm.fetch, effect: require_approval}
`, []string{"base/fetch-needs-ok"}, "p.yaml:5", `no allow pattern or allow rule of policy "base" allows comm.fetch`},
		{"allowed by a pattern", `policies:
  base:
    allow: [pool.*, comm.*]
    rules:
      - {id: fetch-needs-ok, capability: comm.fetch, effect: require_approval}
`, nil, "", ""},
		{"allowed by an allow rule, itself reachable", `policies:
  base:
    allow: [pool.*]
    rules:
      - {id: docs, capability: comm.fetch, when: 'url.host == "a.example"', effect: allow}
      - {id: fetch-needs-ok, capability: comm.fetch, effect: require_approval}
`, nil, "", ""},
		{"a star rule partly allowed", `policies:
  base:
    allow: [comm.search]
    rules:
      - {id: comm-ok, capability: "comm.*", effect: require_approval}
`, nil, "", ""},
		{"a star rule nothing allows", `policies:
  base:
    allow: [pool.*]
    rules:
      - {id: comm-ok, capability: "comm.*", effect: require_approval}
`, []string{"base/comm-ok"}, "p.yaml:5", "allows any capability comm.* matches"},
		{"covered by a deny pattern", `policies:
  base:
    allow: ["*"]
    deny: ["comm.*"]
    rules:
      - {id: r, capability: comm.fetch, when: 'phase == "planning"', effect: deny}
`, []string{"base/r"}, "p.yaml:6", `deny pattern "comm.*" of policy "base" denies comm.fetch`},
		{"covered by the parent's deny", `policies:
  base:
    allow: [pool.*, comm.*]
    deny: [comm.query]
  child:
    extends: base
    rules:
      - {id: q, capability: comm.query, effect: require_approval}
`, []string{"child/q"}, "p.yaml:8", `deny pattern "comm.query" of policy "base"`},
		{"a neutral child defers to its parent", `policies:
  base:
    allow: [pool.*, comm.fetch]
  child:
    extends: base
    rules:
      - {id: q, capability: comm.fetch, effect: require_approval}
`, nil, "", ""},
		{"a child whose own allows leave it out", `policies:
  base:
    allow: [pool.*, comm.fetch]
    rules:
      - {id: ok, capability: comm.fetch, effect: require_approval}
  child:
    extends: base
    allow: [pool.*]
    rules:
      - {id: q, capability: comm.fetch, effect: require_approval}
`, []string{"child/q"}, "p.yaml:10", `of policy "child" allows comm.fetch`},
		{"denied only by several patterns together: not reported (a documented limit)", `policies:
  base:
    allow: ["pool.*", "comm.*"]
    deny: [comm.fetch, comm.search, comm.query]
    rules:
      - {id: any-comm, capability: "comm.*", effect: require_approval}
`, nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := []byte(tt.yaml)
			set := compileYAML(t, data)
			var got []string
			for _, u := range set.UnreachableRules() {
				got = append(got, u.Policy+"/"+u.ID)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("unreachable = %q, want %q", got, tt.want)
			}
			err := CheckReachable("p.yaml", data, set)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("CheckReachable: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUnreachableRule) || !strings.Contains(err.Error(), tt.line+":") || !strings.Contains(err.Error(), tt.why) {
				t.Fatalf("CheckReachable = %v; want %s: … %s", err, tt.line, tt.why)
			}
		})
	}
}

// TestUnreachableNeverDecides: every rule UnreachableRules reports is
// indeed never the deciding rule nor matched, for every capability its
// pattern could name — the check agrees with Decide.
func TestUnreachableNeverDecides(t *testing.T) {
	data := []byte(`policies:
  base:
    allow: [pool.*, comm.search]
    deny: [pipeline.run:danger_*]
    rules:
      - {id: fetch-ok, capability: comm.fetch, effect: require_approval}
      - {id: danger, capability: "pipeline.run:danger_*", effect: require_approval}
      - {id: search-ok, capability: "comm.*", effect: require_approval}
`)
	set := compileYAML(t, data)
	p, _ := set.Get("base")
	reported := map[string]bool{}
	for _, u := range set.UnreachableRules() {
		reported[u.ID] = true
	}
	if !reported["fetch-ok"] || !reported["danger"] || reported["search-ok"] {
		t.Fatalf("reported %v", reported)
	}
	fired := map[string]bool{}
	for _, c := range append(slices.Clone(Capabilities), "pipeline.run:danger_x", "pipeline.run:report") {
		for _, phase := range []string{"planning", "execution"} {
			d := p.Decide(&Input{Capability: c, Phase: phase})
			fired[d.RuleID] = true
			for _, m := range d.Matched {
				fired[m] = true
			}
		}
	}
	for id := range reported {
		if fired[id] {
			t.Errorf("rule %s reported unreachable, but Decide reached it", id)
		}
	}
	if !fired["search-ok"] {
		t.Error("search-ok is reachable (comm.search) but Decide never reached it")
	}
}

// compileYAML compiles the policies of a file's contents, as p.yaml.
func compileYAML(t *testing.T, data []byte) *Set {
	t.Helper()
	specs, err := DecodePolicies("p.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	set, err := CompileSet("p.yaml", data, specs)
	if err != nil {
		t.Fatal(err)
	}
	return set
}
