package poisoning

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The corpus: testdata/poisoning/{tuned,heldout}.json at the module's
// root, tool definitions written in the styles of real MCP servers
// (GitHub, Slack, filesystem, browser, databases, search, weather,
// calendar, payments …), poisoned ones in eleven attack families and
// benign ones, among them benign look-alikes (descriptions that
// legitimately say "you must", warn the model, name a sibling tool).
// Every part's servers are reviewed together, as upstreams of one
// Airlock, so the checks across the catalog run.
//
// tuned.json is what the rules were developed against: each poisoned
// definition lists signals it must raise. heldout.json was written
// before the scanner and no rule was tuned on it: labels only.

type corpusTool struct {
	Name        string                     `json:"name"`
	Label       string                     `json:"label"`
	Family      string                     `json:"family"`
	Description string                     `json:"description"`
	Params      map[string]json.RawMessage `json:"params"`
	Schema      json.RawMessage            `json:"schema"`
	Required    []string                   `json:"required"`
	Expect      []Signal                   `json:"expect"`
}

type corpus struct {
	Part    string `json:"part"`
	Servers []struct {
		Upstream string       `json:"upstream"`
		Tools    []corpusTool `json:"tools"`
	} `json:"servers"`
}

// corpusCase is one definition of a corpus, ready to scan.
type corpusCase struct {
	corpusTool
	tool Tool
}

func loadCorpus(t testing.TB, part string) []corpusCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "poisoning", part+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var c corpus
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("%s: %v", part, err)
	}
	var out []corpusCase
	for _, s := range c.Servers {
		for _, ct := range s.Tools {
			schema := ct.Schema
			if schema == nil {
				props := map[string]json.RawMessage{}
				for name, raw := range ct.Params {
					var desc string
					if json.Unmarshal(raw, &desc) == nil {
						raw, _ = json.Marshal(map[string]string{"type": "string", "description": desc})
					}
					props[name] = raw
				}
				m := map[string]any{"type": "object", "properties": props}
				if len(ct.Required) > 0 {
					m["required"] = ct.Required
				}
				schema, _ = json.Marshal(m)
			}
			out = append(out, corpusCase{corpusTool: ct, tool: Tool{Upstream: s.Upstream, Name: ct.Name, Description: ct.Description, InputSchema: schema}})
		}
	}
	return out
}

// rates is what a part measures: flagged poisoned and flagged benign,
// overall and per family.
type rates struct {
	poisoned, poisonedFlagged, benign, benignFlagged int
	family                                           map[string][2]int // family → {flagged, total}
}

func (r rates) poisonedRate() float64 { return float64(r.poisonedFlagged) / float64(r.poisoned) }
func (r rates) benignRate() float64   { return float64(r.benignFlagged) / float64(r.benign) }

// measure reviews every definition of a part in one catalog.
func measure(cases []corpusCase) (rates, map[string]Report) {
	var tools []Tool
	for _, c := range cases {
		tools = append(tools, c.tool)
	}
	cat := NewCatalog(tools)
	r := rates{family: map[string][2]int{}}
	reports := map[string]Report{}
	for _, c := range cases {
		rep := Scan(c.tool, cat)
		reports[c.tool.Upstream+"/"+c.Name] = rep
		fam := r.family[c.Family]
		fam[1]++
		if rep.Flagged {
			fam[0]++
		}
		r.family[c.Family] = fam
		if c.Label == "poisoned" {
			r.poisoned++
			if rep.Flagged {
				r.poisonedFlagged++
			}
		} else {
			r.benign++
			if rep.Flagged {
				r.benignFlagged++
			}
		}
	}
	return r, reports
}

// The targets of issue 25, for each part: ≥ 90% of poisoned definitions
// flagged, ≤ 5% of benign ones, no family of attacks below 70%.
const (
	targetPoisoned = 0.90
	targetBenign   = 0.05
	targetFamily   = 0.70
)

// TestPoisoningCorpus reviews both parts of the corpus and holds each to
// the targets; with -v it prints the figures BENCHMARKS.md reports (go
// test -run TestPoisoningCorpus -v ./internal/policy/poisoning).
func TestPoisoningCorpus(t *testing.T) {
	for _, part := range []string{"tuned", "heldout"} {
		t.Run(part, func(t *testing.T) {
			cases := loadCorpus(t, part)
			r, reports := measure(cases)
			t.Logf("%s: poisoned flagged %d/%d (%.1f%%), benign flagged %d/%d (%.1f%%)", part,
				r.poisonedFlagged, r.poisoned, 100*r.poisonedRate(), r.benignFlagged, r.benign, 100*r.benignRate())
			fams := make([]string, 0, len(r.family))
			for f := range r.family {
				fams = append(fams, f)
			}
			sort.Strings(fams)
			for _, f := range fams {
				v := r.family[f]
				t.Logf("  %-24s %2d/%2d flagged (%.0f%%)", f, v[0], v[1], 100*float64(v[0])/float64(v[1]))
			}
			if testing.Verbose() {
				for _, c := range cases {
					rep := reports[c.tool.Upstream+"/"+c.Name]
					if rep.Flagged != (c.Label == "poisoned") {
						t.Logf("  MISS %s %s/%s score %.2f %v", c.Label, c.tool.Upstream, c.Name, rep.Score, summary(rep))
					}
				}
			}
			if r.poisonedRate() < targetPoisoned || r.benignRate() > targetBenign {
				t.Errorf("%s: %.1f%% of poisoned flagged (target ≥ %.0f%%), %.1f%% of benign (target ≤ %.0f%%)", part,
					100*r.poisonedRate(), 100*targetPoisoned, 100*r.benignRate(), 100*targetBenign)
			}
			for _, f := range fams {
				if v := r.family[f]; !strings.HasPrefix(f, "benign") && float64(v[0]) < targetFamily*float64(v[1]) {
					t.Errorf("%s: family %s flagged %d of %d (target ≥ %.0f%%)", part, f, v[0], v[1], 100*targetFamily)
				}
			}
		})
	}
}

// TestCorpusExpectedSignals: every tuned definition raises the signals
// it lists, and its verdict matches its label (the tuned part is the
// table test of each family).
func TestCorpusExpectedSignals(t *testing.T) {
	cases := loadCorpus(t, "tuned")
	_, reports := measure(cases)
	for _, c := range cases {
		t.Run(c.Family+"/"+c.tool.Upstream+"/"+c.Name, func(t *testing.T) {
			rep := reports[c.tool.Upstream+"/"+c.Name]
			for _, s := range c.Expect {
				if !rep.Has(s) {
					t.Errorf("lacks %s: %v", s, summary(rep))
				}
			}
			if rep.Flagged != (c.Label == "poisoned") {
				t.Errorf("%s flagged=%v score %.2f: %v", c.Label, rep.Flagged, rep.Score, summary(rep))
			}
		})
	}
}

func summary(r Report) []string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, fmt.Sprintf("%s %.1f %s [%s] %q", f.Signal, f.Weight, f.Field, f.Detail, f.Excerpt))
	}
	return slices.Clip(out)
}

// BenchmarkScan reviews the tuned corpus's definitions, each in the
// catalog of all of them: the cost of `airlock upstreams review` per
// tool.
func BenchmarkScan(b *testing.B) {
	cases := loadCorpus(b, "tuned")
	var tools []Tool
	for _, c := range cases {
		tools = append(tools, c.tool)
	}
	cat := NewCatalog(tools)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Scan(tools[i%len(tools)], cat)
	}
}
