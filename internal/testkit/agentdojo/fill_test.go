package agentdojo

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// suiteDir is the root testdata/agentdojo, from this package's directory.
var suiteDir = filepath.Join("..", "..", "..", "testdata", "agentdojo")

var suiteNames = []string{"banking", "slack", "travel"}

func loadSuites(t *testing.T) map[string]*Suite {
	t.Helper()
	out := map[string]*Suite{}
	for _, n := range suiteNames {
		s, err := LoadSuite(filepath.Join(suiteDir, n+".json"))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = s
	}
	return out
}

// suiteRuns is a run of every one of suites under its own policy file, of
// the file's policies named by policies (nil: the run's default).
func suiteRuns(t *testing.T, suites map[string]*Suite, policies []string) []SuiteRun {
	t.Helper()
	var runs []SuiteRun
	for _, n := range suiteNames {
		pf, err := LoadPolicyFile(filepath.Join(suiteDir, n+".policy.yaml"), n)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, SuiteRun{Suite: suites[n], Policy: pf, Policies: policies})
	}
	return runs
}

// TestRenderersReproduceExport: re-rendering each stored value gives the
// exported text byte for byte, canaries left in place — so the renderers
// escape as Python's json.dumps and str() do.
func TestRenderersReproduceExport(t *testing.T) {
	keep := Injections{}
	for _, s := range loadSuites(t) {
		for id := range s.InjectionVectors {
			keep[id] = "{{INJECTION:" + id + "}}"
		}
		for _, uid := range s.UserTaskIDs() {
			for i, c := range s.UserTasks[uid].Calls {
				switch c.Render {
				case "repr":
					got, err := Fill(c, keep, false)
					if err != nil || got != c.Result {
						t.Errorf("%s %s call %d: repr re-render\n got %q\nwant %q (%v)", s.Name, uid, i, got, c.Result, err)
					}
				case "json":
					v, err := decodeOrdered([]byte(c.Result))
					if err != nil {
						t.Errorf("%s %s call %d: %v", s.Name, uid, i, err)
						continue
					}
					if got := PyJSONDumps(v); got != c.Result {
						t.Errorf("%s %s call %d: json re-render\n got %q\nwant %q", s.Name, uid, i, got, c.Result)
					}
				}
			}
		}
	}
}

// TestBenignFillMatchesDefault: where the export stored the default run's
// result, plain substitution of the YAML-decoded default reproduces it
// (banking's escapes), or differs only by the quote str() picks (travel:
// the default has an apostrophe), which Fill handles by re-rendering.
func TestBenignFillMatchesDefault(t *testing.T) {
	n := 0
	for _, s := range loadSuites(t) {
		inj := s.BenignInjections()
		for _, uid := range s.UserTaskIDs() {
			for i, c := range s.UserTasks[uid].Calls {
				if c.ResultDefault == nil {
					continue
				}
				n++
				c2 := c
				c2.ResultDefault = nil
				got, err := Fill(c2, inj, true)
				if err != nil || got != *c.ResultDefault {
					t.Errorf("%s %s call %d: benign fill\n got %q\nwant %q (%v)", s.Name, uid, i, got, *c.ResultDefault, err)
				}
			}
		}
	}
	if n != 2 {
		t.Errorf("%d results with result_default, want 2 (the README names two)", n)
	}
}

// TestAttackFillGolden: attack fills equal what Python computes with
// PyYAML, json.dumps and str() (testdata/attack_golden.json was written
// by doing exactly that for a few pairs of each suite).
func TestAttackFillGolden(t *testing.T) {
	suites := loadSuites(t)
	data, err := os.ReadFile(filepath.Join("testdata", "attack_golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Suite         string `json:"suite"`
		UserTask      string `json:"user_task"`
		InjectionTask string `json:"injection_task"`
		Call          int    `json:"call"`
		Want          string `json:"want"`
	}
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		s := suites[tc.Suite]
		u, it := s.UserTasks[tc.UserTask], s.InjectionTasks[tc.InjectionTask]
		got, err := Fill(u.Calls[tc.Call], s.AttackInjections(u, it), false)
		if err != nil || got != tc.Want {
			t.Errorf("%s %s/%s call %d:\n got %q\nwant %q (%v)", tc.Suite, tc.UserTask, tc.InjectionTask, tc.Call, got, tc.Want, err)
		}
	}
}

func TestYAMLDoubleQuoted(t *testing.T) {
	for in, want := range map[string]string{
		`a\tb\nc`:       "a\tb\nc",
		"a\nb":          "a b",
		"a  \n  b":      "a b",
		"a\n\nb":        "a\nb",
		"\n\n\nx\n\n\n": "\n\nx\n\n",
		`\x41\u00e9\"`:  "Aé\"",
		"a\\\n   b":     "ab",
		`a\ b`:          "a b",
	} {
		if got := YAMLDoubleQuoted(in); got != want {
			t.Errorf("YAMLDoubleQuoted(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPyReprs(t *testing.T) {
	for in, want := range map[string]string{
		"plain":           `'plain'`,
		"it's":            `"it's"`,
		`both ' and "`:    `'both \' and "'`,
		"tab\tnl\n\\":     `'tab\tnl\n\\'`,
		"zw\u200bx\u00a0": `'zw\u200bx\xa0'`,
		"café":            `'café'`,
	} {
		if got := PyStrRepr(in); got != want {
			t.Errorf("PyStrRepr(%q) = %s, want %s", in, got, want)
		}
	}
	if got := PyJSONDumps(mustOrdered(t, `{"b": "é\u2028😀", "a": [1, 2.5, null, true]}`)); got != `{"b": "\u00e9\u2028\ud83d\ude00", "a": [1, 2.5, null, true]}` {
		t.Errorf("PyJSONDumps = %s", got)
	}
}

func mustOrdered(t *testing.T, s string) any {
	t.Helper()
	v, err := decodeOrdered([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
