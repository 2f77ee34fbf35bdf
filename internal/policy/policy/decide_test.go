package policy

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func mustCompile(t testing.TB, s Spec) *Policy {
	t.Helper()
	p, err := Compile(s)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return p
}

func TestPatternsDenyFirst(t *testing.T) {
	p := mustCompile(t, Spec{
		Allow: []string{"pool.*", "comm.fetch", "pipeline.run:*"},
		Deny:  []string{"pipeline.run:danger_*", "pool.write"},
	})
	tests := []struct {
		cap    string
		effect Effect
		rule   string
	}{
		{"pool.read", Allow, "allow:pool.*"},
		{"pool.list", Allow, "allow:pool.*"},
		{"pool.write", Deny, "deny:pool.write"}, // deny beats a matching allow
		{"comm.fetch", Allow, "allow:comm.fetch"},
		{"comm.search", Deny, "default"}, // no match = deny
		{"pipeline.run:report", Allow, "allow:pipeline.run:*"},
		{"pipeline.run:danger_rm", Deny, "deny:pipeline.run:danger_*"},
		{"", Deny, "default"},
		{"POOL.READ", Deny, "default"}, // ids are case-sensitive
	}
	for _, tc := range tests {
		t.Run(tc.cap, func(t *testing.T) {
			d := p.Decide(&Input{Capability: tc.cap})
			if d.Effect != tc.effect || d.RuleID != tc.rule {
				t.Fatalf("Decide(%q) = %s by %s, want %s by %s", tc.cap, d.Effect, d.RuleID, tc.effect, tc.rule)
			}
			if d.Reason == "" {
				t.Fatal("decision without a reason")
			}
		})
	}
}

func TestEmptyPolicyDeniesEverything(t *testing.T) {
	p := mustCompile(t, Spec{})
	if d := p.Decide(&Input{Capability: "pool.read"}); d.Effect != Deny || d.RuleID != "default" {
		t.Fatalf("got %+v", d)
	}
	var nilPolicy *Policy
	if d := nilPolicy.Decide(&Input{Capability: "pool.read"}); d.Effect != Deny {
		t.Fatalf("nil policy: %+v", d)
	}
	if d := p.Decide(nil); d.Effect != Deny {
		t.Fatalf("nil input: %+v", d)
	}
}

// TestPrecedence walks the rows of the precedence table in doc.go, one
// policy with one rule of each kind, each row switched on by an argument.
func TestPrecedence(t *testing.T) {
	p := mustCompile(t, Spec{
		Allow: []string{"pool.*"},
		Deny:  []string{"pool.secret"},
		Rules: []RuleSpec{
			{ID: "grant-fetch", Capability: "comm.fetch", When: `args.grant == true`, Effect: Allow},
			{ID: "approve", Capability: "*", When: `args.approve == true`, Effect: RequireApproval},
			{ID: "deny-flag", Capability: "*", When: `args.deny == true`, Effect: Deny},
			{ID: "approve-2", Capability: "pool.*", When: `args.approve2 == true`, Effect: RequireApproval},
			{ID: "typed", Capability: "pool.typed", When: `args.n > 3`, Effect: Deny},
		},
		Network: NetworkSpec{AllowHosts: []string{"ok.test"}},
	})
	tests := []struct {
		name    string
		cap     string
		args    map[string]any
		effect  Effect
		rule    string
		matched []string
	}{
		{"deny pattern beats everything", "pool.secret", map[string]any{"approve": true}, Deny, "deny:pool.secret", []string{"deny:pool.secret"}},
		{"no allow at all is default deny, rules unevaluated", "comm.search", map[string]any{"deny": true}, Deny, "default", nil},
		{"network before rules", "comm.fetch", map[string]any{"grant": true, "url": "https://bad.test/"}, Deny, "network", nil},
		{"deny rule beats approval", "pool.read", map[string]any{"approve": true, "deny": true}, Deny, "deny-flag", []string{"allow:pool.*", "approve", "deny-flag"}},
		{"approval beats allow", "pool.read", map[string]any{"approve": true}, RequireApproval, "approve", []string{"allow:pool.*", "approve"}},
		{"first approval reported", "pool.read", map[string]any{"approve": true, "approve2": true}, RequireApproval, "approve", []string{"allow:pool.*", "approve", "approve-2"}},
		{"approval never grants", "comm.fetch", map[string]any{"approve": true}, Deny, "default", []string{"approve"}},
		{"allow rule grants", "comm.fetch", map[string]any{"grant": true, "url": "https://ok.test/"}, Allow, "grant-fetch", []string{"grant-fetch"}},
		{"allow rule + approval", "comm.fetch", map[string]any{"grant": true, "approve": true}, RequireApproval, "approve", []string{"grant-fetch", "approve"}},
		{"allow rule false is default deny", "comm.fetch", map[string]any{"grant": false}, Deny, "default", nil},
		{"plain allow", "pool.read", nil, Allow, "allow:pool.*", []string{"allow:pool.*"}},
		{"eval error is deny", "pool.typed", map[string]any{"n": "four"}, Deny, "typed", []string{"allow:pool.*", "typed"}},
		{"missing arg is an eval error", "pool.typed", nil, Deny, "typed", []string{"allow:pool.*", "typed"}},
		{"eval ok", "pool.typed", map[string]any{"n": 1.0}, Allow, "allow:pool.*", []string{"allow:pool.*"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := p.Decide(&Input{Capability: tc.cap, Args: tc.args})
			if d.Effect != tc.effect || d.RuleID != tc.rule {
				t.Fatalf("got %s by %s (%s), want %s by %s", d.Effect, d.RuleID, d.Reason, tc.effect, tc.rule)
			}
			if !slices.Equal(d.Matched, tc.matched) {
				t.Fatalf("Matched = %q, want %q", d.Matched, tc.matched)
			}
		})
	}
}

func TestEvalErrorReason(t *testing.T) {
	p := mustCompile(t, Spec{Allow: []string{"x"}, Rules: []RuleSpec{{ID: "cmp", Capability: "x", When: `args.n > 3`, Effect: Deny}}})
	d := p.Decide(&Input{Capability: "x", Args: map[string]any{"n": "str"}})
	if d.Effect != Deny || d.RuleID != "cmp" || !strings.Contains(d.Reason, "failed to evaluate") || strings.Contains(d.Reason, "\n") {
		t.Fatalf("got %+v", d)
	}
}

// TestEnvironment checks every identifier a condition can use.
func TestEnvironment(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)
	in := &Input{
		Tool: "declare_need", Capability: "comm.fetch", Tier: "external", Session: "s1",
		Principal: "alice", Role: "analyst", Phase: "execution", Now: now,
		Args: map[string]any{
			"url": "https://Docs.Example.org.:8443/a/b?q=1", "pool": "sales", "path": "x/y.csv",
			"query": "weather", "limit": 10.0, "tags": []any{"a", "b"}, "nested": map[string]any{"k": "v"},
		},
	}
	conds := []string{
		`tool == "declare_need"`,
		`capability == "comm.fetch"`,
		`tier == "external"`,
		`session == "s1"`,
		`principal == "alice"`,
		`role == "analyst"`,
		`phase == "execution"`,
		`now.Hour() == 9 && now.Weekday().String() == "Monday"`,
		`now > date("2026-01-01")`,
		`url.host == "docs.example.org"`,
		`url.scheme == "https"`,
		`url.port == 8443`,
		`url.path == "/a/b"`,
		`url.raw == "https://docs.example.org.:8443/a/b?q=1"`, // the normal form
		`pool == "sales"`,
		`path == "x/y.csv"`,
		`query == "weather"`,
		`args.limit == 10`,
		`"b" in args.tags`,
		`args.nested.k == "v"`,
		`args.missing == nil`,
		`(args.missing ?? 5) == 5`,
		`"limit" in args`,
		`args.url matches "^https://"`,
	}
	for _, c := range conds {
		t.Run(c, func(t *testing.T) {
			p := mustCompile(t, Spec{Rules: []RuleSpec{{ID: "r", Capability: "*", When: c, Effect: Allow}},
				Network: NetworkSpec{AllowHosts: []string{"*"}}})
			if d := p.Decide(in); d.Effect != Allow {
				t.Fatalf("%s: got %+v", c, d)
			}
		})
	}
}

func TestInputOverridesArgs(t *testing.T) {
	p := mustCompile(t, Spec{Rules: []RuleSpec{{ID: "r", Capability: "*", Effect: Allow,
		When: `pool == "p2" && path == "b" && query == "q2" && url.host == "two.test"`}}})
	in := &Input{Capability: "pool.read", Pool: "p2", Path: "b", Query: "q2", URL: "https://two.test/",
		Args: map[string]any{"pool": "p1", "path": "a", "query": "q1", "url": "https://one.test/"}}
	if d := p.Decide(in); d.Effect != Allow {
		t.Fatalf("got %+v", d)
	}
}

func TestURLDefaults(t *testing.T) {
	tests := []struct {
		url, cond string
	}{
		{"https://a.test/", `url.port == 443`},
		{"http://a.test/", `url.port == 80`},
		{"ftp://a.test/", `url.port == 0`},
		{"", `url.host == "" && url.raw == "" && url.port == 0`},
		{"%zz", `url.host == "" && url.raw == "%zz"`}, // unparsable: raw only
		{"https://[::1]:9/", `url.host == "::1" && url.port == 9`},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			p := mustCompile(t, Spec{Rules: []RuleSpec{{ID: "r", Capability: "*", When: tc.cond, Effect: Allow}}})
			if d := p.Decide(&Input{Capability: "pool.read", Args: map[string]any{"url": tc.url}}); d.Effect != Allow {
				t.Fatalf("%s with url %q: %+v", tc.cond, tc.url, d)
			}
		})
	}
}

func TestZeroNowIsWallClock(t *testing.T) {
	p := mustCompile(t, Spec{Rules: []RuleSpec{{ID: "r", Capability: "*", When: `now.Year() >= 2025`, Effect: Allow}}})
	if d := p.Decide(&Input{Capability: "x"}); d.Effect != Allow {
		t.Fatalf("got %+v", d)
	}
}

func TestDecideAllocations(t *testing.T) {
	p := mustCompile(t, Spec{Allow: []string{"pool.*", "pipeline.run:*"}, Deny: []string{"comm.*"}})
	for _, c := range []string{"pool.read", "comm.fetch", "other"} {
		in := &Input{Capability: c, Now: time.Unix(1, 0)}
		if n := testing.AllocsPerRun(100, func() { p.Decide(in) }); n != 0 {
			t.Errorf("pattern-only Decide(%s) allocates %v times", c, n)
		}
	}
	// With rules the count is constant: it must not grow with the number
	// of calls (no leak into pooled state, no unbounded caches).
	r := hundredRules(t)
	in := &Input{Capability: "cap3.op", Phase: "execution", Now: time.Unix(1, 0),
		Args: map[string]any{"limit": 1.0, "url": "https://a.example.org/", "tags": []any{"x"}}}
	few := testing.AllocsPerRun(10, func() { r.Decide(in) })
	many := testing.AllocsPerRun(2000, func() { r.Decide(in) })
	if many > few {
		t.Fatalf("allocations grow with calls: %v after 10, %v after 2000", few, many)
	}
}

func TestDecideConcurrent(t *testing.T) {
	p := hundredRules(t)
	done := make(chan Decision)
	for i := range 4 {
		go func() {
			var d Decision
			for j := range 200 {
				d = p.Decide(&Input{Capability: "cap" + string(rune('0'+(i+j)%10)) + ".op", Phase: "execution",
					Args: map[string]any{"limit": float64(j), "url": "https://x.example1000001.org/"}})
			}
			done <- d
		}()
	}
	for range 4 {
		<-done
	}
}

// TestNowMethods checks that the compile-time rewrite of now.<Method>()
// (timefuncs.go) gives exactly what the method gives, and leaves other
// methods alone.
func TestNowMethods(t *testing.T) {
	now := time.Date(2026, 3, 2, 9, 30, 45, 123, time.UTC)
	conds := []string{
		`now.Hour() == 9`, `now.Minute() == 30`, `now.Second() == 45`, `now.Nanosecond() == 123`,
		`now.Year() == 2026`, `now.YearDay() == 61`, `now.Day() == 2`,
		`int(now.Month()) == 3`, `now.Month().String() == "March"`, `now.Weekday().String() == "Monday"`,
		`now.Hour() >= 9 && now.Hour() < 17 && now.Weekday().String() not in ["Saturday", "Sunday"]`,
		`now?.Hour() == 9`,
	}
	for _, c := range conds {
		p := mustCompile(t, Spec{Rules: []RuleSpec{{ID: "r", Capability: "*", When: c, Effect: Allow}}})
		if d := p.Decide(&Input{Capability: "x", Now: now}); d.Effect != Allow {
			t.Errorf("%s: %+v", c, d)
		}
	}
	if _, err := Compile(Spec{Rules: []RuleSpec{{ID: "r", Capability: "*", When: `now.Hour(1) == 9`, Effect: Allow}}}); err == nil {
		t.Error("now.Hour(1) compiled")
	}
}

// TestDecideNormalisesURL: a path rule sees the URL's normal form, so dot
// segments, doubled slashes and escaped unreserved characters cannot read
// as another path (issue 10, item 1), and a URL that hides a dot segment
// behind an escape has no normal form and is denied.
func TestDecideNormalisesURL(t *testing.T) {
	p := mustCompile(t, Spec{
		Allow:   []string{"comm.fetch"},
		Rules:   []RuleSpec{{ID: "gated", Capability: "comm.fetch", When: `url.path startsWith "/gated/"`, Effect: RequireApproval}},
		Network: NetworkSpec{AllowHosts: []string{"docs.test"}},
	})
	tests := []struct {
		url    string
		effect Effect
		rule   string
	}{
		{"https://docs.test/open/page.txt", Allow, "allow:comm.fetch"},
		{"https://docs.test/gated/secret.txt", RequireApproval, "gated"},
		{"https://docs.test/x/../gated/secret.txt", RequireApproval, "gated"},
		{"https://docs.test//gated/secret.txt", RequireApproval, "gated"},
		{"https://docs.test/./gated/secret.txt", RequireApproval, "gated"},
		{"https://docs.test/x/%2e%2e/gated/secret.txt", RequireApproval, "gated"},
		{"https://docs.test/%67ated/secret.txt", RequireApproval, "gated"},
		{"https://docs.test/x/..%2Fgated/secret.txt", Deny, "network"},
		{"https://docs.test/x/..;/gated/secret.txt", Deny, "network"},
	}
	for _, tc := range tests {
		t.Run(tc.url, func(t *testing.T) {
			d := p.Decide(&Input{Tool: "declare_need", Capability: "comm.fetch", URL: tc.url})
			if d.Effect != tc.effect || d.RuleID != tc.rule {
				t.Fatalf("got %+v, want %s by %s", d, tc.effect, tc.rule)
			}
		})
	}
}
