package metrics_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/metrics"
)

// TestNilIsANoOp: code built without metrics calls the same methods.
func TestNilIsANoOp(t *testing.T) {
	var m *metrics.Metrics
	m.Call("list_pools", "allow", "ok", "", time.Millisecond)
	m.Step(metrics.StepAudit, time.Millisecond)
	m.AuditCommit(3, time.Millisecond, false)
	m.SandboxRun(metrics.RunKilled, []string{"memory"})
	m.ApprovalDecided("approved", time.Minute)
	m.GaugeFunc("x", "y", func() float64 { return 1 })
}

// TestExposition: what the methods record is what a scrape reads.
func TestExposition(t *testing.T) {
	m := metrics.New()
	m.Call("read_pool_file", "allow", "violation", "NOT_FOUND", 3*time.Millisecond)
	m.Call("read_pool_file", "allow", "violation", "NOT_FOUND", time.Millisecond)
	m.Step(metrics.StepExecute, 2*time.Millisecond)
	m.AuditCommit(4, time.Millisecond, false)
	m.AuditCommit(2, time.Millisecond, true)
	m.SandboxRun(metrics.RunKilled, []string{"memory", "procs"})
	m.GaugeFunc("airlock_test_gauge", "A test gauge.", func() float64 { return 7 })
	m.ApprovalDecided("approved", 90*time.Second)
	m.ApprovalDecided("expired", time.Hour)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`airlock_calls_total{decision="allow",outcome="violation",tool="read_pool_file",violation="NOT_FOUND"} 2`,
		`airlock_call_duration_seconds_count{tool="read_pool_file"} 2`,
		`airlock_runner_step_duration_seconds_count{step="execute"} 1`,
		`airlock_audit_commit_records_sum 4`,
		`airlock_audit_commit_failures_total 1`,
		`airlock_sandbox_runs_total{result="killed"} 1`,
		`airlock_sandbox_limit_hits_total{limit="memory"} 1`,
		`airlock_sandbox_limit_hits_total{limit="procs"} 1`,
		`airlock_test_gauge 7`,
		`airlock_approval_latency_seconds_bucket{decision="approved",le="60"} 0`,
		`airlock_approval_latency_seconds_bucket{decision="approved",le="120"} 1`,
		`airlock_approval_latency_seconds_sum{decision="expired"} 3600`,
		`go_goroutines `,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
}
