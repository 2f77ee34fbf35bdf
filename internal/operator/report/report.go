// Package report builds a session's "Sources Used" report (seed 000) from
// the audit trail alone: what was bound, what was used, how many files,
// whether integrity held, the pipeline runs and every violation. The CLI's
// `airlock report` and the web console's context page print the same
// report from this one builder, so they cannot disagree.
package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/kit/textcut"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// Errors of Build.
var (
	// ErrAmbiguous: the prefix names more than one session.
	ErrAmbiguous = errors.New("ambiguous session prefix")
	// ErrNoSession: no record of the audit trail names the session.
	ErrNoSession = errors.New("no such session in the audit trail")
)

// Scanner reads the audit trail in order (operator.API.Scan).
type Scanner interface {
	Scan(ctx context.Context, afterSeq int64, fn func(*audit.Record) error) error
}

var _ Scanner = (*operator.API)(nil)

// Build scans the trail for the session whose id is id or starts with it.
func Build(ctx context.Context, sc Scanner, id string) (*Report, error) {
	rep := &Report{files: map[string]bool{}, used: map[string]bool{}}
	err := sc.Scan(ctx, 0, func(r *audit.Record) error {
		if r.SessionID == "" || !strings.HasPrefix(r.SessionID, id) {
			return nil
		}
		if rep.session != "" && rep.session != r.SessionID {
			return fmt.Errorf("session prefix %q: %s and %s: %w", id, rep.session, r.SessionID, ErrAmbiguous)
		}
		rep.add(r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if rep.session == "" {
		return nil, fmt.Errorf("session %q: %w", id, ErrNoSession)
	}
	return rep, nil
}

// Session is the full id of the session reported on.
func (s *Report) Session() string { return s.session }

// sourceViolations are the codes that count as source-binding violations.
var sourceViolations = []string{
	string(violation.PathOutsidePools), string(violation.UnknownPoolID), string(violation.PoolNotSelected),
	string(violation.IntegrityFailure), string(violation.NetworkAccessAttempt), string(violation.WriteAttempt),
}

// PipelineRun is the evidence of one run_pipeline call, as audited.
type PipelineRun struct {
	RunID        string `json:"run_id"`
	Pipeline     string `json:"pipeline"`
	ExitCode     int    `json:"exit_code"`
	Killed       bool   `json:"killed"`
	KillReason   string `json:"kill_reason"`
	DurationMS   int64  `json:"duration_ms"`
	SnapshotHash string `json:"snapshot_hash"`
	Outputs      []struct {
		Name string `json:"name"`
	} `json:"outputs"`
	Violations []json.RawMessage `json:"violations"`
	Sources    struct {
		PoolsUsed         []string `json:"pools_used"`
		FilesAccessed     int      `json:"files_accessed"`
		IntegrityVerified bool     `json:"integrity_verified"`
	} `json:"source_usage"`
}

// Report is one session's Sources Used report.
type Report struct {
	session, context, principal, role, transport string
	opened, closed                               string
	bound                                        []string
	used                                         map[string]bool
	files                                        map[string]bool
	pipelineFiles, violations, calls             int
	verified, failed                             bool
	runs                                         []PipelineRun
	outcomes                                     map[audit.Outcome]int
}

func (s *Report) add(r *audit.Record) {
	s.session, s.context, s.principal, s.role, s.transport = r.SessionID, r.ContextID, r.Principal, r.Role, r.Transport
	var extra struct {
		PoolsBound []string     `json:"pools_bound"`
		Pool       string       `json:"pool"`
		Path       string       `json:"path"`
		Evidence   *PipelineRun `json:"evidence"`
	}
	_ = json.Unmarshal(r.Extra, &extra)
	switch r.Capability {
	case string(audit.KindSessionOpen):
		s.opened, s.bound = r.Time.Format("2006-01-02 15:04:05Z07:00"), extra.PoolsBound
		return
	case string(audit.KindSessionClose):
		s.closed = r.Time.Format("2006-01-02 15:04:05Z07:00")
		return
	}
	if r.Outcome == audit.OutcomeStarted {
		return
	}
	s.calls++
	if s.outcomes == nil {
		s.outcomes = map[audit.Outcome]int{}
	}
	s.outcomes[r.Outcome]++
	if slices.Contains(sourceViolations, r.Violation) {
		s.violations++
		if r.Violation == string(violation.IntegrityFailure) {
			s.failed = true
		}
	}
	if r.Outcome != audit.OutcomeOK {
		return
	}
	switch {
	case r.Tool == "read_pool_file":
		s.used[extra.Pool] = true
		s.files[extra.Pool+"/"+extra.Path] = true
		s.verified = true
	case r.Tool == "list_pools" && extra.Pool != "":
		s.used[extra.Pool] = true
	case extra.Evidence != nil:
		ev := *extra.Evidence
		s.runs = append(s.runs, ev)
		for _, p := range ev.Sources.PoolsUsed {
			s.used[p] = true
		}
		s.pipelineFiles += ev.Sources.FilesAccessed
		s.violations += len(ev.Violations)
		s.verified = s.verified || ev.Sources.IntegrityVerified
	}
}

// WriteMarkdown writes the report as markdown (what `airlock report`
// prints and the console shows). Every value from the trail is a table
// cell or a heading's text, escaped by cell: a principal is an OAuth
// subject the identity provider chose, and the CLI prints the report to
// the operator's terminal, so a newline, an escape sequence or a '|' in
// it must not forge a line, drive the terminal or break a table.
func (s *Report) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "# Session %s\n\n", cell(s.session))
	fmt.Fprintf(w, "Principal %s, role %s, over %s; opened %s", cell(s.principal), cell(s.role), cell(s.transport), cell(orDash(s.opened)))
	if s.closed != "" {
		fmt.Fprintf(w, ", closed %s", cell(s.closed))
	}
	fmt.Fprintf(w, ". %d calls.\n\n", s.calls)
	used := make([]string, 0, len(s.used))
	for p := range s.used {
		used = append(used, p)
	}
	slices.Sort(used)
	integrity := "❌ No (nothing verified yet)"
	switch {
	case s.failed:
		integrity = "❌ No (an integrity failure was recorded)"
	case s.verified:
		integrity = "✅ Yes"
	}
	fmt.Fprintln(w, "## Sources Used\n\n| Property | Value |\n|----------|-------|")
	fmt.Fprintf(w, "| Context ID | %s |\n| Pools Bound | %s |\n| Pools Used | %s |\n", cell(s.context), cell(orDash(strings.Join(s.bound, ", "))), cell(orDash(strings.Join(used, ", "))))
	fmt.Fprintf(w, "| Files Accessed | %d |\n| Integrity Verified | %s |\n| Violations | %d |\n", len(s.files)+s.pipelineFiles, integrity, s.violations)
	if len(s.runs) > 0 {
		fmt.Fprintln(w, "\n## Pipeline runs\n\n| Run | Pipeline | Result | Duration | Outputs | Snapshot |\n|-----|----------|--------|----------|---------|----------|")
		for _, r := range s.runs {
			result := fmt.Sprintf("exit %d", r.ExitCode)
			if r.Killed {
				result = "killed: " + r.KillReason
			}
			names := make([]string, len(r.Outputs))
			for i, o := range r.Outputs {
				names[i] = o.Name
			}
			snap, _ := textcut.Prefix(r.SnapshotHash, 16)
			fmt.Fprintf(w, "| %s | %s | %s | %d ms | %s | `%s…` |\n", cell(r.RunID), cell(r.Pipeline), cell(result), r.DurationMS, cell(orDash(strings.Join(names, ", "))), strings.ReplaceAll(cell(snap), "`", "'"))
		}
	}
	fmt.Fprintln(w, "\n## Calls by outcome\n\n| Outcome | Calls |\n|---------|-------|")
	// Every outcome that occurred: the known ones in their order, then any
	// other the trail holds. Cancelled and interrupted calls counted in
	// "N calls" were missing from the table before.
	known := []audit.Outcome{audit.OutcomeOK, audit.OutcomeDenied, audit.OutcomeViolation, audit.OutcomeError, audit.OutcomeCancelled, audit.OutcomeInterrupted}
	others := make([]audit.Outcome, 0)
	for o := range s.outcomes {
		if !slices.Contains(known, o) {
			others = append(others, o)
		}
	}
	slices.Sort(others)
	for _, o := range append(known, others...) {
		if n := s.outcomes[o]; n > 0 {
			fmt.Fprintf(w, "| %s | %d |\n", cell(string(o)), n)
		}
	}
}

// cell is a trail value fit for one markdown table cell or heading: '|'
// escaped, and every control, format (bidirectional controls among them)
// or line/paragraph separator character written as \uXXXX.
func cell(v string) string {
	var b strings.Builder
	for _, r := range v {
		switch {
		case r == '|':
			b.WriteString(`\|`)
		case r == utf8.RuneError || unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
