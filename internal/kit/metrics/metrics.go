// Package metrics owns Airlock's Prometheus registry: the series an
// operator scrapes at /metrics, and the only code that names them.
//
// The runner, the store, the sandbox and the server report through the
// methods of [*Metrics]; each is a counter, gauge or histogram update (no
// lock of ours, no allocation beyond the client library's label lookup),
// so reporting stays off the hot path. Every method is a no-op on a nil
// *Metrics, so code built without metrics (tests, operator commands) needs
// no checks.
//
// Labels carry only bounded, server-chosen values — a known tool name
// (an unknown one is "(unknown)"), a decision, an outcome, a violation
// code, a runner step, a sandbox limit — never an argument, a principal or
// anything else an agent chooses, so an agent cannot grow the registry
// (cardinality) or smuggle text into an operator's dashboards.
//
// The registry is the process's own (not the client library's global
// one), so two servers in one test process do not mix their series; it
// also carries the Go runtime and process collectors.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics is one process's registry and series. Safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	calls        *prometheus.CounterVec
	callSeconds  *prometheus.HistogramVec
	stepSeconds  *prometheus.HistogramVec
	auditSeconds prometheus.Histogram
	auditGroup   prometheus.Histogram
	auditFailed  prometheus.Counter
	sandboxRuns  *prometheus.CounterVec
	sandboxLimit *prometheus.CounterVec
	approvalWait *prometheus.HistogramVec
	notices      *prometheus.CounterVec
	upstreams    *upstreamSeries // upstreams.go
}

// approvalBuckets span a person answering at once (seconds) to a need
// left until its deadline (the default declaration TTL is an hour).
var approvalBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 86400}

// latencyBuckets span a cached read (~100µs) to a long pipeline (minutes).
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}

// New returns a registry with Airlock's series and the Go and process
// collectors.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "airlock_calls_total",
		Help: "Tool calls by tool, policy decision, outcome and violation code (empty when none).",
	}, []string{"tool", "decision", "outcome", "violation"})
	m.callSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "airlock_call_duration_seconds", Help: "Tool call latency, from receipt to the audit record's commit.",
		Buckets: latencyBuckets,
	}, []string{"tool"})
	m.stepSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "airlock_runner_step_duration_seconds", Help: "Time spent in each runner step: decide (load, validate, kill switch, phase, policy, limits), execute, finish (bound, truncate, fence), audit.",
		Buckets: latencyBuckets,
	}, []string{"step"})
	m.auditSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "airlock_audit_commit_duration_seconds", Help: "Time to write and fsync one group commit of audit records.",
		Buckets: latencyBuckets,
	})
	m.auditGroup = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "airlock_audit_commit_records", Help: "Audit records per group commit.",
		Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256},
	})
	m.auditFailed = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "airlock_audit_commit_failures_total", Help: "Group commits that failed (every call in them was refused with AUDIT_UNAVAILABLE).",
	})
	m.sandboxRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "airlock_sandbox_runs_total", Help: "Sandboxed pipeline runs by result: ok (exit 0), failed (non-zero exit), killed (a limit ended it), error (it could not run).",
	}, []string{"result"})
	m.sandboxLimit = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "airlock_sandbox_limit_hits_total", Help: "Sandbox limits that refused or ended something, by limit (procs, memory, output, wall_time, cpu_time, disk).",
	}, []string{"limit"})
	m.approvalWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "airlock_approval_latency_seconds", Help: "Time a declared need waited for a person, from its declaration (or retry) to its decision: approved, denied, or expired (nobody decided in time).",
		Buckets: approvalBuckets,
	}, []string{"decision"})
	m.notices = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "airlock_notifications_total", Help: "Notification deliveries by sink (webhook, command) and outcome: delivered, failed (every attempt failed), timeout (the last attempt ran out of time; a command hook was killed), dropped (the sink's queue was full).",
	}, []string{"sink", "outcome"})
	m.reg.MustRegister(m.notices)
	m.registerUpstreams()
	m.reg.MustRegister(m.calls, m.approvalWait, m.callSeconds, m.stepSeconds, m.auditSeconds, m.auditGroup, m.auditFailed,
		m.sandboxRuns, m.sandboxLimit,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in the Prometheus exposition formats. It
// does no access control: the server decides who reaches it.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Call counts one finished tool call and its latency.
func (m *Metrics) Call(tool, decision, outcome, violation string, took time.Duration) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(tool, decision, outcome, violation).Inc()
	m.callSeconds.WithLabelValues(tool).Observe(took.Seconds())
}

// The runner steps [Metrics.Step] times.
const (
	StepDecide  = "decide"
	StepExecute = "execute"
	StepFinish  = "finish"
	StepAudit   = "audit"
)

// Step records the time one call spent in a runner step.
func (m *Metrics) Step(step string, took time.Duration) {
	if m == nil {
		return
	}
	m.stepSeconds.WithLabelValues(step).Observe(took.Seconds())
}

// AuditCommit records one group commit of n records; failed when it did
// not commit.
func (m *Metrics) AuditCommit(n int, took time.Duration, failed bool) {
	if m == nil {
		return
	}
	if failed {
		m.auditFailed.Inc()
		return
	}
	m.auditSeconds.Observe(took.Seconds())
	m.auditGroup.Observe(float64(n))
}

// ApprovalDecided records how long a need waited for a person before
// decision (approved, denied or expired) was reached.
func (m *Metrics) ApprovalDecided(decision string, waited time.Duration) {
	if m == nil {
		return
	}
	m.approvalWait.WithLabelValues(decision).Observe(waited.Seconds())
}

// The results [Metrics.SandboxRun] counts.
const (
	RunOK     = "ok"
	RunFailed = "failed"
	RunKilled = "killed"
	RunError  = "error"
)

// SandboxRun counts one pipeline run by result and the limits it hit.
func (m *Metrics) SandboxRun(result string, limitsHit []string) {
	if m == nil {
		return
	}
	m.sandboxRuns.WithLabelValues(result).Inc()
	for _, l := range limitsHit {
		m.sandboxLimit.WithLabelValues(l).Inc()
	}
}

// GaugeFunc registers a gauge whose value fn computes at scrape time (for
// state that lives elsewhere, e.g. pending approvals in the store). fn
// must be cheap and must not block for long: it runs on every scrape.
func (m *Metrics) GaugeFunc(name, help string, fn func() float64) {
	if m == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, fn))
}

// Notification counts one event's outcome at one notification sink (kind
// and outcome are package notify's constants: bounded).
func (m *Metrics) Notification(kind, outcome string) {
	if m == nil {
		return
	}
	m.notices.WithLabelValues(kind, outcome).Inc()
}
