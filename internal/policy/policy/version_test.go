package policy

import (
	"regexp"
	"strings"
	"testing"
)

const lineageSrc = `
policies:
  base:
    allow: [pool.*, comm.*]
    rules:
      - id: big-reads
        capability: pool.read
        when: '(args.limit ?? 0) > 1000'
        effect: require_approval
    limits:
      max_actions: 100
      costs: { comm.fetch: 1, comm.search: 2 }
      rate: { "comm.*": { per_minute: 10 }, "pool.*": { per_minute: 60 } }
  analyst:
    extends: base
    allow: [pool.*]
  junior:
    extends: analyst
    deny: [pool.write]
  other:
    allow: [pool.read]
`

func mustLoad(t *testing.T, src string) *Set {
	t.Helper()
	s, err := loadString(t, src)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func version(t *testing.T, s *Set, name string) string {
	t.Helper()
	p, ok := s.Get(name)
	if !ok {
		t.Fatalf("no policy %q", name)
	}
	return p.Version()
}

func TestExtends(t *testing.T) {
	s := mustLoad(t, lineageSrc)
	tests := []struct {
		child, parent string
		want          bool
	}{
		{"analyst", "base", true},
		{"junior", "analyst", true},
		{"junior", "base", true}, // transitively
		{"base", "analyst", false},
		{"analyst", "junior", false},
		{"base", "junior", false},
		{"base", "base", true},
		{"analyst", "analyst", true},
		{"other", "other", true},
		{"other", "base", false},
		{"base", "other", false},
		{"junior", "other", false},
		{"nope", "base", false},
		{"base", "nope", false},
		{"nope", "nope", false},
		{"", "", false},
		{"analyst", "", false},
		{"", "base", false},
		{"Base", "base", false},
	}
	for _, tc := range tests {
		if got := s.Extends(tc.child, tc.parent); got != tc.want {
			t.Errorf("Extends(%q, %q) = %v, want %v", tc.child, tc.parent, got, tc.want)
		}
	}
	var nilSet *Set
	if nilSet.Extends("base", "base") {
		t.Error("a nil Set extends")
	}
}

func TestVersion(t *testing.T) {
	a := mustLoad(t, lineageSrc)
	b := mustLoad(t, lineageSrc)
	hex := regexp.MustCompile(`^[0-9a-f]{16}$`)
	seen := map[string]string{}
	for _, n := range a.Names() {
		v := version(t, a, n)
		if v == "" {
			t.Fatalf("%s: empty version", n)
		}
		if !hex.MatchString(v) {
			t.Errorf("%s: version %q, want 16 hex digits", n, v)
		}
		if w := version(t, b, n); w != v {
			t.Errorf("%s: version %s, then %s compiling the same input", n, v, w)
		}
		if m, dup := seen[v]; dup {
			t.Errorf("%s and %s share version %s", n, m, v)
		}
		seen[v] = n
	}

	// Reordering the file (and map keys inside it) changes nothing.
	reordered := `
policies:
  other:
    allow: [pool.read]
  junior:
    deny: [pool.write]
    extends: analyst
  analyst:
    allow: [pool.*]
    extends: base
  base:
    limits:
      rate: { "pool.*": { per_minute: 60 }, "comm.*": { per_minute: 10 } }
      costs: { comm.search: 2, comm.fetch: 1 }
      max_actions: 100
    rules:
      - id: big-reads
        capability: pool.read
        when: '(args.limit ?? 0) > 1000'
        effect: require_approval
    allow: [pool.*, comm.*]
`
	r := mustLoad(t, reordered)
	for _, n := range a.Names() {
		if version(t, r, n) != version(t, a, n) {
			t.Errorf("%s: version changed when only the layout of the file did", n)
		}
	}
}

func TestVersionChanges(t *testing.T) {
	orig := mustLoad(t, lineageSrc)
	tests := []struct {
		name    string
		old     string // replaced once in lineageSrc
		new     string
		changed []string // policies whose version must change; the others must not
	}{
		{"a rule's condition", "> 1000", "> 999", []string{"base", "analyst", "junior"}},
		{"a rule's effect", "effect: require_approval", "effect: deny", []string{"base", "analyst", "junior"}},
		{"a parent's limit", "max_actions: 100", "max_actions: 99", []string{"base", "analyst", "junior"}},
		{"a parent's cost", "comm.search: 2", "comm.search: 3", []string{"base", "analyst", "junior"}},
		{"a parent's allow", "allow: [pool.*, comm.*]", "allow: [pool.*, comm.*, pipeline.run:*]", []string{"base", "analyst", "junior"}},
		{"the middle policy only", "    allow: [pool.*]\n  junior", "    allow: [pool.read]\n  junior", []string{"analyst", "junior"}},
		{"the leaf only", "deny: [pool.write]", "deny: [pool.write, pool.delete]", []string{"junior"}},
		{"an unrelated policy", "allow: [pool.read]\n", "allow: [pool.list]\n", []string{"other"}},
		{"a rule added to the leaf", "deny: [pool.write]\n", "deny: [pool.write]\n    rules:\n      - {id: r, capability: pool.read, effect: deny}\n", []string{"junior"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Count(lineageSrc, tc.old) != 1 {
				t.Fatalf("%q occurs %d times", tc.old, strings.Count(lineageSrc, tc.old))
			}
			s := mustLoad(t, strings.Replace(lineageSrc, tc.old, tc.new, 1))
			for _, n := range orig.Names() {
				want := strings.Contains(" "+strings.Join(tc.changed, " ")+" ", " "+n+" ")
				if got := version(t, s, n) != version(t, orig, n); got != want {
					t.Errorf("%s: version changed = %v, want %v", n, got, want)
				}
			}
		})
	}
}

// A child whose own spec is unchanged gets a new version when only its
// parent changed, and the same version when the parent is restored.
func TestChildVersionFollowsParent(t *testing.T) {
	src := func(parentActions string) string {
		return "policies:\n  p:\n    allow: [pool.*]\n    limits: {max_actions: " + parentActions + "}\n  c:\n    extends: p\n    deny: [pool.write]\n"
	}
	v1 := mustLoad(t, src("10"))
	v2 := mustLoad(t, src("20"))
	v3 := mustLoad(t, src("10"))
	if version(t, v1, "c") == version(t, v2, "c") {
		t.Fatal("child version unchanged when its parent changed")
	}
	if version(t, v1, "c") != version(t, v3, "c") {
		t.Fatal("child version not stable once the parent is restored")
	}
	// Same spec as a root and as a child: different versions.
	root := mustLoad(t, "policies:\n  c:\n    allow: [pool.*]\n")
	child := mustLoad(t, "policies:\n  p:\n    allow: [pool.*]\n  c:\n    extends: p\n    allow: [pool.*]\n")
	if version(t, root, "c") == version(t, child, "c") {
		t.Fatal("a child has the version of the same spec without a parent")
	}
}
