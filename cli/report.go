package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/runner"
	"github.com/airlock-dev/airlock/violation"
)

// runReport prints a session's "Sources Used" report (seed 000) as
// markdown, built from the audit trail alone: what was bound, what was used,
// how many files, whether integrity held, and every violation.
func runReport(ctx context.Context, args []string, io Streams) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("airlock report SESSION [--state DIR] (a session id or a unique prefix; see `airlock audit tail`): %w", ErrUsage)
	}
	id := args[0]
	fs := newFlags("report", io)
	state := fs.String("state", "", "state directory")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	op, dir, err := openOperator(*state, true)
	if err != nil {
		return err
	}
	defer op.Close()
	rep := &sessionReport{files: map[string]bool{}, used: map[string]bool{}}
	err = op.Scan(ctx, 0, func(r *runner.AuditRecord) error {
		if r.SessionID == "" || !strings.HasPrefix(r.SessionID, id) {
			return nil
		}
		if rep.session != "" && rep.session != r.SessionID {
			return fmt.Errorf("session prefix %q is ambiguous: %s and %s: %w", id, rep.session, r.SessionID, ErrUsage)
		}
		rep.add(r)
		return nil
	})
	if err != nil {
		return err
	}
	if rep.session == "" {
		return fmt.Errorf("no session %q in the audit trail of %s: %w", id, dir, ErrFailed)
	}
	rep.write(io.Out)
	return nil
}

// sourceViolations are the codes that count as source-binding violations.
var sourceViolations = []string{
	string(violation.PathOutsidePools), string(violation.UnknownPoolID), string(violation.PoolNotSelected),
	string(violation.IntegrityFailure), string(violation.NetworkAccessAttempt), string(violation.WriteAttempt),
}

type pipelineRun struct {
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

type sessionReport struct {
	session, context, principal, role, transport string
	opened, closed                               string
	bound                                        []string
	used                                         map[string]bool
	files                                        map[string]bool
	pipelineFiles, violations, calls             int
	verified, failed                             bool
	runs                                         []pipelineRun
	outcomes                                     map[string]int
}

func (s *sessionReport) add(r *runner.AuditRecord) {
	s.session, s.context, s.principal, s.role, s.transport = r.SessionID, r.ContextID, r.Principal, r.Role, r.Transport
	var extra struct {
		PoolsBound []string     `json:"pools_bound"`
		Pool       string       `json:"pool"`
		Path       string       `json:"path"`
		Evidence   *pipelineRun `json:"evidence"`
	}
	_ = json.Unmarshal(r.Extra, &extra)
	switch r.Capability {
	case "session.open":
		s.opened, s.bound = r.Time.Format("2006-01-02 15:04:05Z07:00"), extra.PoolsBound
		return
	case "session.close":
		s.closed = r.Time.Format("2006-01-02 15:04:05Z07:00")
		return
	}
	if r.Outcome == "started" {
		return
	}
	s.calls++
	if s.outcomes == nil {
		s.outcomes = map[string]int{}
	}
	s.outcomes[r.Outcome]++
	if slices.Contains(sourceViolations, r.Violation) {
		s.violations++
		if r.Violation == string(violation.IntegrityFailure) {
			s.failed = true
		}
	}
	if r.Outcome != "ok" {
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

func (s *sessionReport) write(w io.Writer) {
	fmt.Fprintf(w, "# Session %s\n\n", s.session)
	fmt.Fprintf(w, "Principal %s, role %s, over %s; opened %s", s.principal, s.role, s.transport, orDash(s.opened))
	if s.closed != "" {
		fmt.Fprintf(w, ", closed %s", s.closed)
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
	fmt.Fprintf(w, "| Context ID | %s |\n| Pools Bound | %s |\n| Pools Used | %s |\n", s.context, orDash(strings.Join(s.bound, ", ")), orDash(strings.Join(used, ", ")))
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
			fmt.Fprintf(w, "| %s | %s | %s | %d ms | %s | `%.16s…` |\n", r.RunID, r.Pipeline, result, r.DurationMS, orDash(strings.Join(names, ", ")), r.SnapshotHash)
		}
	}
	fmt.Fprintln(w, "\n## Calls by outcome\n\n| Outcome | Calls |\n|---------|-------|")
	for _, o := range []string{"ok", "denied", "violation", "error"} {
		if n := s.outcomes[o]; n > 0 {
			fmt.Fprintf(w, "| %s | %d |\n", o, n)
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
