package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/yamlfile"
)

// ErrInvalidCase reports a test case that cannot be run (unknown policy,
// bad expectation, bad time).
var ErrInvalidCase = errors.New("invalid test case")

// CasesFile is the format of a policy test table (`airlock policy test`):
//
//	policy: base            # default policy for cases that name none
//	cases:
//	  - name: docs fetch is allowed
//	    policy: base
//	    call:
//	      tool: declare_need
//	      capability: comm.fetch
//	      args: { url: "https://docs.example.org/x" }
//	      phase: execution
//	      now: "2026-03-02T10:00:00Z"
//	    expect: allow
//	    expect_rule: fetch-only-docs
type CasesFile struct {
	Policy string `json:"policy,omitempty" jsonschema:"description=Policy for cases that do not name one."`
	Cases  []Case `json:"cases" jsonschema:"description=The calls and the decisions expected for them."`
}

// Case is one row of a test table.
type Case struct {
	Name       string `json:"name"`
	Policy     string `json:"policy,omitempty"`
	Call       Call   `json:"call"`
	Expect     Effect `json:"expect" jsonschema:"enum=allow,enum=deny,enum=require_approval"`
	ExpectRule string `json:"expect_rule,omitempty" jsonschema:"description=Rule id that must decide (as in Decision.RuleID)."`
}

// Call is the part of an Input a test case writes.
type Call struct {
	Tool       string         `json:"tool,omitempty"`
	Capability string         `json:"capability"`
	Tier       string         `json:"tier,omitempty"`
	Args       map[string]any `json:"args,omitempty"`
	Phase      string         `json:"phase,omitempty"`
	Role       string         `json:"role,omitempty"`
	Principal  string         `json:"principal,omitempty"`
	Session    string         `json:"session,omitempty"`
	Now        string         `json:"now,omitempty" jsonschema:"description=RFC 3339 time of the call (default 2026-01-05T12:00:00Z so that results do not depend on when the test runs)."`
	// Provenance states where each argument of the need came from, as the
	// runner would have traced it: {recipient: {origin: untrusted,
	// sources: [att_1]}}.
	Provenance map[string]ArgProvenance `json:"provenance,omitempty" jsonschema:"description=Where each argument of the need came from (origin trusted\\, endorsed\\, untrusted or agent; sources; readers; kind)\\, keyed by argument name."`
}

// DefaultCaseTime is the time of a case that sets no now: a fixed Monday
// noon UTC, so a table's results never depend on when it runs.
var DefaultCaseTime = time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)

// Input converts a call to a decision input. Args go through a JSON round
// trip so that a case sees them exactly as the server sees a call's decoded
// JSON arguments (every number a float64), whatever YAML made of them.
func (c Call) Input() (*Input, error) {
	var args map[string]any
	if c.Args != nil {
		raw, err := json.Marshal(c.Args)
		if err != nil {
			return nil, fmt.Errorf("args are not JSON-shaped: %w: %w", ErrInvalidCase, err)
		}
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, fmt.Errorf("args: %w: %w", ErrInvalidCase, err)
		}
	}
	now := DefaultCaseTime
	if c.Now != "" {
		t, err := time.Parse(time.RFC3339, c.Now)
		if err != nil {
			return nil, fmt.Errorf("now %q: want RFC 3339: %w", c.Now, ErrInvalidCase)
		}
		now = t
	}
	if err := checkProvenance(c.Provenance); err != nil {
		return nil, err
	}
	return &Input{
		Tool: c.Tool, Capability: c.Capability, Tier: c.Tier, Session: c.Session,
		Principal: c.Principal, Role: c.Role, Phase: c.Phase, Args: args, Now: now,
		Provenance: c.Provenance,
	}, nil
}

// ParseCall decodes a call written as JSON (for `airlock policy explain
// --call JSON`), refusing unknown fields, and returns its input.
func ParseCall(data []byte) (*Input, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var c Call
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("call: %w: %w", ErrInvalidCase, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("call: trailing data after the JSON object: %w", ErrInvalidCase)
	}
	if c.Capability == "" {
		return nil, fmt.Errorf("call has no capability: %w", ErrInvalidCase)
	}
	return c.Input()
}

// CaseReport is the outcome of RunCases.
type CaseReport struct {
	File    string       `json:"file"`
	Total   int          `json:"total"`
	Passed  int          `json:"passed"`
	Skipped int          `json:"skipped"`
	Results []CaseResult `json:"cases"`
	// Failures are the results that did not pass.
	Failures []CaseFailure `json:"-"`
	// Uncovered are the patterns and rules of the file's policies that no
	// case that ran matched (as Decision.Matched or RuleID reports it);
	// Rules is how many there are in all.
	Uncovered []RuleRef `json:"uncovered"`
	Rules     int       `json:"rules"`
}

// CaseResult is one case that ran.
type CaseResult struct {
	Name     string   `json:"name"`
	Line     int      `json:"line"`
	Policy   string   `json:"policy"`
	Pass     bool     `json:"pass"`
	Want     Effect   `json:"want"`
	WantRule string   `json:"want_rule,omitempty"`
	Got      Decision `json:"got"`
}

// RuleRef names a pattern or rule of a policy.
type RuleRef struct {
	Policy string `json:"policy"`
	Kind   string `json:"kind"` // StepDenyPattern, StepAllowPattern or StepRule
	ID     string `json:"id"`
	// Unreachable, in a coverage report, says why the rule can never
	// fire (Set.UnreachableRules): no case can cover it.
	Unreachable string `json:"unreachable,omitempty"`
}

func (r RuleRef) String() string {
	s := r.Policy + "/" + r.ID + " (" + r.Kind + ")"
	if r.Unreachable != "" {
		s += ": can never fire: " + r.Unreachable
	}
	return s
}

// CaseFailure is one case whose decision was not the expected one.
type CaseFailure struct {
	Name     string
	Line     int
	Policy   string
	Want     Effect
	WantRule string
	Got      Decision
}

// OK reports whether every case passed.
func (r *CaseReport) OK() bool { return len(r.Failures) == 0 }

// String renders the report: one line per failure with the rule that
// decided, then a summary.
func (r *CaseReport) String() string {
	var b strings.Builder
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "%s:%d: FAIL %q (policy %s): want %s, got %s by %s: %s\n",
			r.File, f.Line, f.Name, f.Policy, wantText(f.Want, f.WantRule), f.Got.Effect, f.Got.RuleID, f.Got.Reason)
	}
	r.writeSummary(&b)
	return b.String()
}

// wantText is a case's expectation as the reports print it: the effect,
// and the rule when the case names one.
func wantText(effect Effect, rule string) string {
	if rule != "" {
		return string(effect) + " by " + rule
	}
	return string(effect)
}

// writeSummary ends String and Verbose: PASS or FAIL, the count, and how
// many cases --run skipped.
func (r *CaseReport) writeSummary(b *strings.Builder) {
	status := "PASS"
	if !r.OK() {
		status = "FAIL"
	}
	fmt.Fprintf(b, "%s: %d/%d cases passed", status, r.Passed, r.Total-r.Skipped)
	if r.Skipped > 0 {
		fmt.Fprintf(b, " (%d skipped by --run)", r.Skipped)
	}
	b.WriteString("\n")
}

// Verbose renders every case that ran, with its decision, rule and
// reason, then the summary.
func (r *CaseReport) Verbose() string {
	var b strings.Builder
	for _, c := range r.Results {
		status := "ok  "
		if !c.Pass {
			status = "FAIL"
		}
		fmt.Fprintf(&b, "%s %s:%d %q (policy %s): %s by %s: %s", status, r.File, c.Line, c.Name, c.Policy, c.Got.Effect, c.Got.RuleID, c.Got.Reason)
		if !c.Pass {
			fmt.Fprintf(&b, " (want %s)", wantText(c.Want, c.WantRule))
		}
		b.WriteString("\n")
	}
	r.writeSummary(&b)
	return b.String()
}

// CoverageString renders how many patterns and rules the cases hit and
// lists those none hit.
func (r *CaseReport) CoverageString() string {
	var b strings.Builder
	fmt.Fprintf(&b, "coverage: %d of %d patterns and rules hit by a case\n", r.Rules-len(r.Uncovered), r.Rules)
	for _, u := range r.Uncovered {
		fmt.Fprintf(&b, "  never hit: %s\n", u)
	}
	return b.String()
}

// CaseOptions select the cases RunCases runs; nil runs them all.
type CaseOptions struct {
	// Match, when set, runs only the cases whose name it accepts (`policy
	// test --run PATTERN`); the others are counted as skipped. Every case
	// is still validated.
	Match func(name string) bool
}

// RunCases runs the test table in casesFile against the policies of s,
// the cases opts selects (nil: all). A case fails when the decision's
// effect, or its RuleID when expect_rule is set, differs; failures are in
// the report, which holds every case's result and the rules no selected
// case hit (see [CaseReport.Uncovered]). An error means the table could not
// be run at all (unreadable, malformed, naming an unknown policy) and
// carries the file and line.
func RunCases(s *Set, casesFile string, opts *CaseOptions) (*CaseReport, error) {
	data, err := os.ReadFile(casesFile)
	if err != nil {
		return nil, fmt.Errorf("reading cases: %w", err)
	}
	var cf CasesFile
	if err := yamlfile.Decode(casesFile, data, &cf); err != nil {
		return nil, err
	}
	if len(cf.Cases) == 0 {
		return nil, yamlfile.At(casesFile, data, "$.cases", fmt.Errorf("no cases: %w", ErrInvalidCase))
	}
	rep := &CaseReport{File: casesFile, Total: len(cf.Cases)}
	hits := map[string]map[string]bool{} // layer (policy) name → pattern/rule ids hit
	for i, c := range cf.Cases {
		path := fmt.Sprintf("$.cases[%d]", i)
		bad := func(field string, err error) (*CaseReport, error) {
			return nil, yamlfile.At(casesFile, data, path+field, err)
		}
		name := c.Policy
		if name == "" {
			name = cf.Policy
		}
		p, ok := s.Get(name)
		if !ok {
			return bad(".policy", fmt.Errorf("policy %q (have %v): %w", name, s.Names(), ErrInvalidCase))
		}
		if !c.Expect.valid() {
			return bad(".expect", fmt.Errorf("%q: want allow, deny or require_approval: %w", c.Expect, ErrInvalidCase))
		}
		if c.Call.Capability == "" {
			return bad(".call", fmt.Errorf("call has no capability: %w", ErrInvalidCase))
		}
		in, err := c.Call.Input()
		if err != nil {
			return bad(".call", err)
		}
		caseName := c.Name
		if caseName == "" {
			caseName = fmt.Sprintf("cases[%d]", i)
		}
		if opts != nil && opts.Match != nil && !opts.Match(caseName) {
			rep.Skipped++
			continue
		}
		d := p.Decide(in)
		line, _ := yamlfile.Locate(data, path)
		res := CaseResult{Name: caseName, Line: line, Policy: name, Want: c.Expect, WantRule: c.ExpectRule, Got: d,
			Pass: d.Effect == c.Expect && (c.ExpectRule == "" || c.ExpectRule == d.RuleID)}
		rep.Results = append(rep.Results, res)
		markHits(hits, p, d)
		if res.Pass {
			rep.Passed++
			continue
		}
		rep.Failures = append(rep.Failures, CaseFailure{
			Name: caseName, Line: line, Policy: name, Want: c.Expect, WantRule: c.ExpectRule, Got: d,
		})
	}
	rep.Uncovered, rep.Rules = uncovered(s, hits)
	return rep, nil
}

// markHits records the patterns and rules a decision matched, in every
// layer of p's chain that has an entry with that id.
func markHits(hits map[string]map[string]bool, p *Policy, d Decision) {
	ids := append([]string{d.RuleID}, d.Matched...)
	for _, l := range p.layers {
		for _, id := range ids {
			if l.has(id) {
				if hits[l.name] == nil {
					hits[l.name] = map[string]bool{}
				}
				hits[l.name][id] = true
			}
		}
	}
}

func (l *layer) has(id string) bool {
	for _, es := range [][]entry{l.allow, l.deny} {
		for _, e := range es {
			if e.id == id {
				return true
			}
		}
	}
	for _, r := range l.rules {
		if r.id == id {
			return true
		}
	}
	return false
}

// uncovered lists every pattern and rule of every policy in s (each in
// the policy that declares it) that no case hit, and counts them all. A
// rule that can never fire is listed as such whatever the cases hit: a
// case expecting the deny it gets instead must not make it look covered
// (issue 24 item 7).
func uncovered(s *Set, hits map[string]map[string]bool) (out []RuleRef, total int) {
	never := map[RuleRef]string{}
	for _, u := range s.UnreachableRules() {
		never[u.RuleRef] = u.Why
	}
	for _, name := range s.Names() {
		p, _ := s.Get(name)
		if p == nil || len(p.layers) == 0 {
			continue
		}
		l := p.layers[len(p.layers)-1] // the policy's own layer
		var refs []RuleRef
		for _, e := range l.deny {
			refs = append(refs, RuleRef{Policy: name, Kind: StepDenyPattern, ID: e.id})
		}
		for _, e := range l.allow {
			refs = append(refs, RuleRef{Policy: name, Kind: StepAllowPattern, ID: e.id})
		}
		for _, r := range l.rules {
			refs = append(refs, RuleRef{Policy: name, Kind: StepRule, ID: r.id})
		}
		for _, r := range refs {
			total++
			if why, ok := never[r]; ok {
				r.Unreachable = why
				out = append(out, r)
			} else if !hits[name][r.ID] {
				out = append(out, r)
			}
		}
	}
	return out, total
}
