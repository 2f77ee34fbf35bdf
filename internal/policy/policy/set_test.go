package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/yamlfile"
)

func TestLoadFileIgnoresOtherSections(t *testing.T) {
	s, err := LoadFile("../../../testdata/policy/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(s.Names(), ","); got != "analyst,base,researcher" {
		t.Fatalf("Names = %s", got)
	}
	b, _ := s.Get("base")
	if b.Name() != "base" || b.Description() == "" {
		t.Fatalf("base: name %q description %q", b.Name(), b.Description())
	}
}

func TestDecodePolicies(t *testing.T) {
	tests := []struct {
		name string
		src  string
		line int
		is   error
	}{
		{"empty", "  \n", 0, yamlfile.ErrEmpty},
		{"no policies", "server: {}\n", 1, ErrNoPolicies},
		{"empty policies", "server: {}\npolicies: {}\n", 2, ErrNoPolicies},
		{"not a mapping", "- a\n- b\n", 1, ErrNoPolicies},
		{"two documents", "policies: {a: {}}\n---\npolicies: {b: {}}\n", 0, nil},
		{"syntax", "policies:\n  a: [\n", 2, nil},
		{"unknown key deep", "roles: {x: 1}\npolicies:\n  a:\n    network:\n      allow_host: [x]\n", 5, nil},
		{"alias to outside", "x: &d {allow: [a]}\npolicies:\n  a: *d\n", 3, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodePolicies("p.yaml", []byte(tc.src))
			var ye *yamlfile.Error
			if !errors.As(err, &ye) {
				t.Fatalf("err = %v, want *yamlfile.Error", err)
			}
			if ye.File != "p.yaml" || (tc.line != 0 && ye.Line != tc.line) {
				t.Errorf("at %s:%d, want p.yaml:%d: %v", ye.File, ye.Line, tc.line, err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want %v", err, tc.is)
			}
		})
	}
	// Anchors inside policies work.
	specs, err := DecodePolicies("p.yaml", []byte("policies:\n  a: &d {allow: [x]}\n  b: *d\n"))
	if err != nil || len(specs["b"].Allow) != 1 {
		t.Fatalf("anchors inside policies: %v %+v", err, specs)
	}
}

func TestLoadFileMissing(t *testing.T) {
	_, err := LoadFile(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

func TestRunCasesExamples(t *testing.T) {
	files, err := filepath.Glob("testdata/*_cases.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no case tables: %v", err)
	}
	for _, cases := range files {
		if strings.HasPrefix(filepath.Base(cases), "failing_") {
			continue
		}
		t.Run(cases, func(t *testing.T) {
			pol := strings.TrimSuffix(cases, "_cases.yaml") + ".yaml"
			s, err := LoadFile(pol)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := RunCases(s, cases, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.OK() || rep.Total == 0 {
				t.Fatalf("cases failed:\n%s", rep)
			}
		})
	}
}

func TestRunCasesReportsMismatches(t *testing.T) {
	s, err := LoadFile("../../../testdata/policy/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunCases(s, "../../../testdata/policy/failing_cases.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK() || rep.Total != 3 || rep.Passed != 1 || len(rep.Failures) != 2 {
		t.Fatalf("report = %+v", rep)
	}
	f := rep.Failures[0]
	if f.Name != "wrong effect" || f.Line != 8 || f.Got.Effect != Deny || f.Got.RuleID != "default" {
		t.Fatalf("first failure = %+v", f)
	}
	out := rep.String()
	for _, want := range []string{
		`testdata/policy/failing_cases.yaml:8: FAIL "wrong effect" (policy base): want allow, got deny by default`,
		`want require_approval by some-other-rule, got require_approval by big-reads-need-ok`,
		"FAIL: 1/3 cases passed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func TestRunCasesErrors(t *testing.T) {
	s, err := LoadFile("../../../testdata/policy/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		src  string
		line int
	}{
		{"unknown policy", "cases:\n  - name: x\n    policy: nope\n    call: {capability: a}\n    expect: allow\n", 3},
		{"no default policy", "cases:\n  - name: x\n    call: {capability: a}\n    expect: allow\n", 0},
		{"bad expect", "policy: base\ncases:\n  - name: x\n    call: {capability: a}\n    expect: yes\n", 5},
		{"no capability", "policy: base\ncases:\n  - name: x\n    call: {tool: t}\n    expect: deny\n", 4},
		{"bad now", "policy: base\ncases:\n  - name: x\n    call: {capability: a, now: tomorrow}\n    expect: deny\n", 4},
		{"unknown key", "policy: base\ncases:\n  - name: x\n    call: {capability: a}\n    expect: deny\n    expected_rule: r\n", 6},
		{"no cases", "policy: base\ncases: []\n", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(path, []byte(tc.src), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := RunCases(s, path, nil)
			var ye *yamlfile.Error
			if !errors.As(err, &ye) {
				t.Fatalf("err = %v, want *yamlfile.Error", err)
			}
			if tc.line != 0 && ye.Line != tc.line {
				t.Fatalf("line %d, want %d: %v", ye.Line, tc.line, err)
			}
		})
	}
}

func TestCallInputNormalisesNumbers(t *testing.T) {
	in, err := Call{Capability: "x", Args: map[string]any{"n": uint64(3), "m": map[string]any{"k": 1}}}.Input()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := in.Args["n"].(float64); !ok {
		t.Fatalf("n is %T, want float64 as the server decodes JSON", in.Args["n"])
	}
	if !in.Now.Equal(DefaultCaseTime) {
		t.Fatalf("Now = %v", in.Now)
	}
}

func TestExplain(t *testing.T) {
	s, err := LoadFile("../../../testdata/policy/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, _ := s.Get("analyst")
	in := &Input{Capability: "comm.fetch", Phase: "planning", Args: map[string]any{"url": "https://docs.example.org/"}}
	ex := Explain(p, in)
	if ex.Decision.Effect != Deny || ex.Decision.RuleID != "deny:comm.*" {
		t.Fatalf("decision = %+v", ex.Decision)
	}
	// Explain goes on past the deciding deny and shows every rule.
	seen := map[string]Step{}
	for _, st := range ex.Steps {
		seen[st.Policy+"/"+st.ID] = st
	}
	if st := seen["analyst/deny:comm.*"]; !st.Matched || st.Kind != StepDenyPattern {
		t.Errorf("deny step = %+v", st)
	}
	if st := seen["base/no-external-while-planning"]; !st.Matched || !strings.Contains(st.Why, "condition true") {
		t.Errorf("planning rule step = %+v", st)
	}
	if st := seen["base/big-reads-need-ok"]; st.Matched || !strings.Contains(st.Why, "not evaluated") {
		t.Errorf("pool.read rule step = %+v", st)
	}
	if st := seen["/network"]; st.Kind != StepNetwork || st.Matched {
		t.Errorf("network step = %+v", st)
	}
	text := ex.String()
	if !strings.Contains(text, "decision: deny by deny:comm.*") || !strings.Contains(text, "chain base > analyst") {
		t.Fatalf("text:\n%s", text)
	}

	// An evaluation error shows as a matched deny step.
	b, _ := s.Get("base")
	ex = Explain(b, &Input{Capability: "pool.read", Args: map[string]any{"limit": "x"}})
	found := false
	for _, st := range ex.Steps {
		if st.ID == "big-reads-need-ok" {
			found = st.Matched && st.Effect == Deny && strings.Contains(st.Why, "failed to evaluate")
		}
	}
	if !found || ex.Decision.Effect != Deny {
		t.Fatalf("eval error not explained:\n%s", ex)
	}
	// A default deny gets its own step.
	ex = Explain(b, &Input{Capability: "comm.query"})
	if last := ex.Steps[len(ex.Steps)-1]; last.Kind != StepDefault || !last.Matched {
		t.Fatalf("last step = %+v", last)
	}
}

func TestMalformedYAMLDoesNotPanic(t *testing.T) {
	// goccy panics on these; the loaders must turn that into an error.
	for _, src := range []string{"policies:\n a:\n    rules: ! ", "policies:\n  a:\n    allow: ! \n"} {
		_, err := DecodePolicies("p.yaml", []byte(src))
		var ye *yamlfile.Error
		if !errors.As(err, &ye) || ye.File != "p.yaml" {
			t.Errorf("%q: err = %v", src, err)
		}
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("cases: ! \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadFile("../../../testdata/policy/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := RunCases(s, path, nil); err == nil {
		t.Fatal("malformed cases file accepted")
	}
}

func TestParseCall(t *testing.T) {
	in, err := ParseCall([]byte(`{"capability":"comm.fetch","phase":"execution","args":{"url":"https://a.test/","n":3},"now":"2026-03-02T10:00:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	if in.Capability != "comm.fetch" || in.Args["n"] != 3.0 || in.Now.Hour() != 10 {
		t.Fatalf("input = %+v", in)
	}
	for _, bad := range []string{`{"capabilty":"x"}`, `{"capability":"x"} {}`, `{}`, `[`, `{"capability":"x","now":"soon"}`} {
		if _, err := ParseCall([]byte(bad)); !errors.Is(err, ErrInvalidCase) {
			t.Errorf("ParseCall(%s) = %v", bad, err)
		}
	}
}
