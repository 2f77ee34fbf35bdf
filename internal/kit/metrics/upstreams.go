package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// upstreamSeries are the series of upstream MCP servers (issue 23 item
// 5), labelled by the upstream's configured id (the operator's, bounded by
// the configuration; never a tool name or anything an agent chooses).
type upstreamSeries struct {
	calls    *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
	restarts *prometheus.CounterVec
	sessions *prometheus.GaugeVec
}

func (m *Metrics) registerUpstreams() {
	u := &upstreamSeries{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_upstream_calls_total", Help: "Tool calls sent to an upstream MCP server, by upstream and outcome (ok, error: the transport failed or timed out).",
		}, []string{"upstream", "outcome"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "airlock_upstream_call_duration_seconds", Help: "Latency of one tools/call on an upstream's session (the listing and Airlock's own steps excluded).",
			Buckets: latencyBuckets,
		}, []string{"upstream"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_upstream_restarts_total", Help: "Warm upstream sessions started again after their process ended by itself (a crash or a limit).",
		}, []string{"upstream"}),
		sessions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "airlock_upstream_warm_sessions", Help: "Warm upstream sessions this process holds, by upstream.",
		}, []string{"upstream"}),
	}
	m.reg.MustRegister(u.calls, u.seconds, u.restarts, u.sessions)
	m.upstreams = u
}

// UpstreamCall counts one tools/call on upstream and its latency; failed
// when the transport failed (an upstream's own error answer is ok here).
func (m *Metrics) UpstreamCall(upstream string, took time.Duration, failed bool) {
	if m == nil {
		return
	}
	outcome := "ok"
	if failed {
		outcome = "error"
	}
	m.upstreams.calls.WithLabelValues(upstream, outcome).Inc()
	m.upstreams.seconds.WithLabelValues(upstream).Observe(took.Seconds())
}

// UpstreamSession counts a warm session of upstream started (+1) or
// stopped (-1); restart when it replaces one that ended by itself.
func (m *Metrics) UpstreamSession(upstream string, delta int, restart bool) {
	if m == nil {
		return
	}
	m.upstreams.sessions.WithLabelValues(upstream).Add(float64(delta))
	if restart {
		m.upstreams.restarts.WithLabelValues(upstream).Inc()
	}
}
