package policy

import (
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/yamlfile"
)

func TestCompileErrors(t *testing.T) {
	rule := func(id, cap, when string, eff Effect) Spec {
		return Spec{Rules: []RuleSpec{{ID: id, Capability: cap, When: when, Effect: eff}}}
	}
	tests := []struct {
		name  string
		spec  Spec
		field string
		is    error
		msg   string
	}{
		{"empty allow", Spec{Allow: []string{""}}, ".allow[0]", ErrInvalidPattern, "empty"},
		{"padded deny", Spec{Deny: []string{"ok", " comm.*"}}, ".deny[1]", ErrInvalidPattern, "not allowed"},
		{"double star", Spec{Allow: []string{"comm.**"}}, ".allow[0]", ErrInvalidPattern, "single '*'"},
		{"question mark", Spec{Allow: []string{"comm.?"}}, ".allow[0]", ErrInvalidPattern, "not allowed"},
		{"syntax", rule("r", "*", `args.x >`, Allow), ".rules[0].when", ErrExpression, "unexpected"},
		{"unknown identifier", rule("r", "*", `agrs.x == 1`, Allow), ".rules[0].when", ErrExpression, "unknown name agrs"},
		{"unknown url field", rule("r", "*", `url.hots == "x"`, Allow), ".rules[0].when", ErrExpression, "hots"},
		{"not bool", rule("r", "*", `url.host`, Allow), ".rules[0].when", ErrExpression, "bool"},
		{"not bool number", rule("r", "*", `1 + 2`, Allow), ".rules[0].when", ErrExpression, "bool"},
		{"typed mismatch", rule("r", "*", `tool > 3`, Allow), ".rules[0].when", ErrExpression, "invalid operation"},
		{"now() disabled", rule("r", "*", `now().Hour() > 3`, Allow), ".rules[0].when", ErrExpression, ""},
		{"too long", rule("r", "*", strings.Repeat("true && ", 600)+"true", Allow), ".rules[0].when", ErrExpression, "longer"},
		{"no id", rule("", "*", ``, Allow), ".rules[0].id", ErrInvalidRule, "id"},
		{"bad id", rule("has space", "*", ``, Allow), ".rules[0].id", ErrInvalidRule, "id"},
		{"reserved id", rule("default", "*", ``, Allow), ".rules[0].id", ErrInvalidRule, "default"},
		{"no capability", rule("r", "", ``, Allow), ".rules[0]", ErrInvalidRule, "capability"},
		{"bad capability", rule("r", "a b", ``, Allow), ".rules[0].capability", ErrInvalidPattern, ""},
		{"bad effect", rule("r", "*", ``, "permit"), ".rules[0].effect", ErrInvalidRule, "permit"},
		{"empty effect", rule("r", "*", ``, ""), ".rules[0].effect", ErrInvalidRule, ""},
		{"duplicate id", Spec{Rules: []RuleSpec{{ID: "a", Capability: "*", Effect: Deny}, {ID: "a", Capability: "x", Effect: Deny}}}, ".rules[1].id", ErrInvalidRule, "already"},
		{"extends", Spec{Extends: "base"}, ".extends", ErrUnknownParent, "CompileSet"},
		{"bad host", Spec{Network: NetworkSpec{AllowHosts: []string{"a.*.org"}}}, ".network.allow_hosts[0]", ErrInvalidNetwork, ""},
		{"numeric host", Spec{Network: NetworkSpec{AllowHosts: []string{"127.1"}}}, ".network.allow_hosts[0]", ErrInvalidNetwork, "numeric"},
		{"bad deny host", Spec{Network: NetworkSpec{DenyHosts: []string{"ok.test", "bad host"}}}, ".network.deny_hosts[1]", ErrInvalidNetwork, ""},
		{"bad scheme", Spec{Network: NetworkSpec{AllowSchemes: []string{"HTTPS"}}}, ".network.allow_schemes[0]", ErrInvalidNetwork, "lower-case"},
		{"bad cidr", Spec{Network: NetworkSpec{AllowPrivate: []string{"10.0.0.0/33"}}}, ".network.allow_private[0]", ErrInvalidNetwork, "CIDR"},
		{"unclean path", Spec{Filesystem: FilesystemSpec{Read: []string{"a/../b"}}}, ".filesystem.read[0]", ErrInvalidPath, "clean"},
		{"climbing path", Spec{Filesystem: FilesystemSpec{Write: []string{"../x"}}}, ".filesystem.write[0]", ErrInvalidPath, ".."},
		{"negative limit", Spec{Limits: LimitsSpec{MaxActions: -1}}, ".limits.max_actions", nil, "negative"},
		{"bad rate", Spec{Limits: LimitsSpec{Rate: map[string]RateSpec{"comm.*": {}}}}, ".limits.rate.'comm.*'.per_minute", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.spec)
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want *FieldError", err)
			}
			if fe.Field != tc.field {
				t.Errorf("field = %q, want %q (%v)", fe.Field, tc.field, err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("err = %v, want errors.Is %v", err, tc.is)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v, want it to mention %q", err, tc.msg)
			}
		})
	}
}

// loadString compiles the policies of a YAML document the way LoadFile does.
func loadString(t testing.TB, src string) (*Set, error) {
	t.Helper()
	specs, err := DecodePolicies("p.yaml", []byte(src))
	if err != nil {
		return nil, err
	}
	return CompileSet("p.yaml", []byte(src), specs)
}

// wantLine asserts err is (or joins) a *yamlfile.Error at p.yaml:line
// wrapping want.
func wantLine(t *testing.T, err error, line int, want error) {
	t.Helper()
	var ye *yamlfile.Error
	if !errors.As(err, &ye) {
		t.Fatalf("err = %v, want a *yamlfile.Error", err)
	}
	if ye.File != "p.yaml" || ye.Line != line {
		t.Errorf("error at %s:%d, want p.yaml:%d: %v", ye.File, ye.Line, line, err)
	}
	if want != nil && !errors.Is(err, want) {
		t.Errorf("err = %v, want errors.Is %v", err, want)
	}
	if !strings.HasPrefix(err.Error(), "p.yaml:") {
		t.Errorf("message %q does not start with the file", err)
	}
}

// lineCase is a policy document loadString must refuse with an error at
// p.yaml:line wrapping is (nil: any).
type lineCase struct {
	name string
	src  string
	line int
	is   error
}

// wantLoadErrors runs lineCases through loadString and wantLine.
func wantLoadErrors(t *testing.T, tests []lineCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadString(t, tc.src)
			wantLine(t, err, tc.line, tc.is)
		})
	}
}

func TestLoadErrorsHaveLines(t *testing.T) {
	wantLoadErrors(t, []lineCase{
		{"unknown key in a policy", `
policies:
  base:
    allow: [pool.*]
    denny: [comm.*]
`, 5, nil},
		{"unknown key in a rule", `
policies:
  base:
    rules:
      - id: r
        capability: "*"
        effect: allow
        condition: "true"
`, 8, nil},
		{"type error", `
policies:
  base:
    limits:
      max_actions: many
`, 5, nil},
		{"bad expression", `
policies:
  base:
    allow: [pool.*]
    rules:
      - id: r
        capability: pool.read
        when: 'args.limit >'
        effect: deny
`, 8, ErrExpression},
		{"unknown identifier", `
policies:
  base:
    rules:
      - id: r
        capability: pool.read
        effect: deny
        when: 'limit > 3'
`, 8, ErrExpression},
		{"bad effect", `
policies:
  base:
    rules:
      - id: r
        capability: pool.read
        effect: maybe
`, 7, ErrInvalidRule},
		{"bad pattern", `
policies:
  base:
    allow:
      - pool.*
      - "pool read"
`, 6, ErrInvalidPattern},
		{"bad rate key", `
policies:
  base:
    limits:
      rate:
        "comm.*": { per_minute: 0 }
`, 6, nil},
		{"duplicate policy", `
policies:
  base: {}
  base: {}
`, 4, nil},
		{"bad name", `
policies:
  "has space": {}
`, 3, ErrInvalidName},
	})
}

func TestCompileSetReportsEveryPolicy(t *testing.T) {
	_, err := loadString(t, `
policies:
  a:
    allow: ["bad pattern"]
  b:
    deny: [ok]
  c:
    rules: [{ id: r, capability: x, effect: nope }]
  d:
    extends: a
`)
	msg := err.Error()
	if strings.Count(msg, "p.yaml:") != 2 || !strings.Contains(msg, "p.yaml:4:") || !strings.Contains(msg, "p.yaml:8:") {
		t.Fatalf("want one error for a (line 4) and one for c (line 8), d not re-reported:\n%s", msg)
	}
	if strings.Index(msg, "p.yaml:4:") > strings.Index(msg, "p.yaml:8:") {
		t.Fatalf("errors not in file order:\n%s", msg)
	}
}
