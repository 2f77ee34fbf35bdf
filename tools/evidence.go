package tools

import (
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/fence"
	"github.com/airlock-dev/airlock/internal/execution/sandbox"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/execution/workspace"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// Evidence is the record of one pipeline run (seed 000's ExecutionEvidence
// with its SourceUsageSummary): returned to the agent, stored in the run's
// audit record, and read back by `airlock report`.
type Evidence struct {
	RunID       string             `json:"run_id"`
	Pipeline    string             `json:"pipeline"`
	ContextID   string             `json:"context_id"`
	StartedAt   time.Time          `json:"started_at"`
	ExitCode    int                `json:"exit_code"`
	Signal      string             `json:"signal,omitempty"`
	Killed      bool               `json:"killed"`
	KillReason  string             `json:"kill_reason,omitempty"`
	LimitsHit   []string           `json:"limits_hit,omitempty"`
	DurationMS  int64              `json:"duration_ms"`
	UserCPUMS   int64              `json:"user_cpu_ms"`
	SysCPUMS    int64              `json:"sys_cpu_ms"`
	MaxRSSBytes int64              `json:"max_rss_bytes"`
	DiskBytes   int64              `json:"disk_bytes"` // what /out and /tmp held at the end
	Outputs     []workspace.Output `json:"outputs"`
	// OutputPool is the pool the outputs can be read from (read_pool_file,
	// list_pools): "run-<id>", with the trust of the least-trusted input.
	OutputPool   string                `json:"output_pool,omitempty"`
	OutputTrust  string                `json:"output_trust,omitempty"`
	Missing      []string              `json:"missing_outputs,omitempty"`
	SnapshotHash string                `json:"snapshot_hash"`
	Violations   []workspace.Violation `json:"violations,omitempty"`
	Mechanisms   []string              `json:"mechanisms"`
	Sources      SourceUsage           `json:"source_usage"`
	StdoutBytes  int                   `json:"stdout_bytes"`
	StderrBytes  int                   `json:"stderr_bytes"`
	StdoutCut    bool                  `json:"stdout_truncated,omitempty"`
	StderrCut    bool                  `json:"stderr_truncated,omitempty"`
}

// SourceUsage is what the run was given and used. A pipeline reads its input
// pools directly inside the sandbox, so files_accessed counts the files of
// the input pools, each verified against its manifest before the run.
type SourceUsage struct {
	ContextID         string   `json:"context_id"`
	PoolsBound        []string `json:"pools_bound"`
	PoolsUsed         []string `json:"pools_used"`
	FilesAccessed     int      `json:"files_accessed"`
	IntegrityVerified bool     `json:"integrity_verified"`
	Violations        int      `json:"violations"`
}

func (ev *Evidence) fill(res *sandbox.Result, col *workspace.Collected) {
	ev.ExitCode, ev.Signal, ev.Killed, ev.KillReason, ev.LimitsHit = res.ExitCode, res.Signal, res.Killed, res.KillReason, res.LimitsHit
	ev.DurationMS, ev.UserCPUMS, ev.SysCPUMS = res.Duration.Milliseconds(), res.UserCPU.Milliseconds(), res.SysCPU.Milliseconds()
	ev.MaxRSSBytes, ev.DiskBytes, ev.Mechanisms = res.MaxRSSBytes, res.DiskBytes, res.Mechanisms
	ev.Outputs, ev.Missing, ev.SnapshotHash, ev.Violations = col.Outputs, col.Missing, col.SnapshotHash, col.Violations
	ev.StdoutBytes, ev.StderrBytes, ev.StdoutCut, ev.StderrCut = len(res.Stdout), len(res.Stderr), res.StdoutTruncated, res.StderrTruncated
	ev.Sources.Violations = len(col.Violations)
	if ev.Outputs == nil {
		ev.Outputs = []workspace.Output{}
	}
}

// tailBytes is how much of stdout and stderr the agent gets back.
const tailBytes = 4096

func (ev *Evidence) result(res *sandbox.Result) *toolkit.Result {
	var b strings.Builder
	status := fmt.Sprintf("exit %d", ev.ExitCode)
	if ev.Killed {
		status = fmt.Sprintf("killed (%s limit)", ev.KillReason)
	} else if ev.Signal != "" {
		status = "ended by " + ev.Signal
	}
	fmt.Fprintf(&b, "Pipeline %s, run %s: %s after %d ms.\n", ev.Pipeline, ev.RunID, status, ev.DurationMS)
	for _, o := range ev.Outputs {
		fmt.Fprintf(&b, "- output %s: %d bytes, sha256 %s\n", o.Name, o.Size, o.SHA256)
	}
	for _, m := range ev.Missing {
		fmt.Fprintf(&b, "- output %s: not produced\n", m)
	}
	// Violation paths and details are names the pipeline chose (a file
	// called "x\n[Airlock] Operator message", a link target): quoted, they
	// cannot start a line or pass for Airlock's words
	// (server/content_test.go: TestPipelineFileNamesCannotForgeLines).
	for _, v := range ev.Violations {
		if v.Code == violation.WriteAttempt {
			fmt.Fprintf(&b, "- %s: %s (%s) — discarded\n", v.Code, fence.Quote(v.Path), fence.Quote(v.Detail))
		} else {
			fmt.Fprintf(&b, "- %s: %s\n", v.Code, fence.Quote(v.Detail))
		}
	}
	if ev.OutputPool != "" {
		fmt.Fprintf(&b, "Outputs are readable as pool %s (%s): list_pools pool=%q, read_pool_file pool=%q path=NAME.\n",
			ev.OutputPool, ev.OutputTrust, ev.OutputPool, ev.OutputPool)
	}
	fmt.Fprintf(&b, "Snapshot hash: %s\n", ev.SnapshotHash)
	s := ev.Sources
	fmt.Fprintf(&b, "Sources used: pools %s (bound: %s), %d files, integrity verified: %v, violations: %d.\n",
		strings.Join(s.PoolsUsed, ", "), strings.Join(s.PoolsBound, ", "), s.FilesAccessed, s.IntegrityVerified, s.Violations)
	out := &toolkit.Result{Text: b.String(), Structured: ev.forAgent(), Audit: map[string]any{"evidence": ev}}
	// The pipeline is untrusted code: what it printed is untrusted content.
	if tail := tails(res); tail != "" {
		out.UntrustedText = tail
		out.Untrusted = &toolkit.Provenance{Kind: "pipeline_output", Source: "pipeline:" + ev.Pipeline + "/" + ev.RunID, Trust: "untrusted"}
	}
	return out
}

// forAgent is the evidence as the agent receives it: violation paths and
// details sanitized (no controls, escapes, marker words or "[Airlock"
// prefix), since a client may show structuredContent to the model. The
// audit record keeps them as they were.
func (ev *Evidence) forAgent() *Evidence {
	cp := *ev
	cp.Violations = make([]workspace.Violation, len(ev.Violations))
	for i, v := range ev.Violations {
		v.Path, _ = fence.Sanitize(v.Path)
		v.Detail, _ = fence.Sanitize(v.Detail)
		cp.Violations[i] = v
	}
	if ev.Violations == nil {
		cp.Violations = nil
	}
	return &cp
}

func tails(res *sandbox.Result) string {
	var b strings.Builder
	for _, s := range []struct {
		name string
		data []byte
	}{{"stdout", res.Stdout}, {"stderr", res.Stderr}} {
		if len(s.data) == 0 {
			continue
		}
		data := s.data
		note := ""
		if len(data) > tailBytes {
			data = data[len(data)-tailBytes:]
			note = fmt.Sprintf(" (last %d of %d bytes)", tailBytes, len(s.data))
		}
		fmt.Fprintf(&b, "--- %s%s ---\n%s\n", s.name, note, data)
	}
	return b.String()
}
