package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/yamlfile"
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
	return &Input{
		Tool: c.Tool, Capability: c.Capability, Tier: c.Tier, Session: c.Session,
		Principal: c.Principal, Role: c.Role, Phase: c.Phase, Args: args, Now: now,
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
	File     string
	Total    int
	Passed   int
	Failures []CaseFailure
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
		want := string(f.Want)
		if f.WantRule != "" {
			want += " by " + f.WantRule
		}
		fmt.Fprintf(&b, "%s:%d: FAIL %q (policy %s): want %s, got %s by %s: %s\n",
			r.File, f.Line, f.Name, f.Policy, want, f.Got.Effect, f.Got.RuleID, f.Got.Reason)
	}
	status := "PASS"
	if !r.OK() {
		status = "FAIL"
	}
	fmt.Fprintf(&b, "%s: %d/%d cases passed\n", status, r.Passed, r.Total)
	return b.String()
}

// RunCases runs the test table in casesFile against the policies of s. A
// case fails when the decision's effect, or its RuleID when expect_rule is
// set, differs; failures are in the report. An error means the table could
// not be run at all (unreadable, malformed, naming an unknown policy) and
// carries the file and line.
func RunCases(s *Set, casesFile string) (*CaseReport, error) {
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
		d := p.Decide(in)
		if d.Effect == c.Expect && (c.ExpectRule == "" || c.ExpectRule == d.RuleID) {
			rep.Passed++
			continue
		}
		line, _ := yamlfile.Locate(data, path)
		caseName := c.Name
		if caseName == "" {
			caseName = fmt.Sprintf("cases[%d]", i)
		}
		rep.Failures = append(rep.Failures, CaseFailure{
			Name: caseName, Line: line, Policy: name, Want: c.Expect, WantRule: c.ExpectRule, Got: d,
		})
	}
	return rep, nil
}
