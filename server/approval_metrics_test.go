package server

import (
	"context"
	"net/http"
	"testing"

	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// TestApprovalLatencyScraped (issue 12, approval latency): needs that wait
// for an operator, decided as `airlock approvals approve|deny` decides
// them (an operator handle of its own, no metrics), show up in the
// serving process's airlock_approval_latency_seconds by decision on a
// real scrape of /metrics once its sweep ran — each once, however many
// sweeps follow; a need still pending is not counted.
func TestApprovalLatencyScraped(t *testing.T) {
	o := newOpsFixture(t, "")
	origin := newOrigin(t)
	c := o.client(t, "web-operator")
	var ids []string
	for _, path := range []string{"/gated/a", "/gated/b", "/gated/c"} {
		res := callOK(t, c, "declare_need", need(origin.URL+path))
		ids = append(ids, structured(t, res)["declaration_id"].(string))
	}
	op, err := operator.Open(o.state, false)
	must(t, err)
	defer op.Close()
	ctx := context.Background()
	if _, err := op.Approve(ctx, ids[0], "tester", "reviewed"); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Deny(ctx, ids[1], "tester", "not needed"); err != nil {
		t.Fatal(err)
	}
	o.r.Sweep(ctx)
	o.r.Sweep(ctx) // a second sweep reports nothing twice
	status, body := get(t, o.url+PathMetrics, nil)
	if status != http.StatusOK {
		t.Fatalf("GET /metrics: %d", status)
	}
	for _, ch := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"decision=approved"}, 1},
		{[]string{"decision=denied"}, 1},
		{nil, 2}, // the third still waits
	} {
		if got, _ := series(body, "airlock_approval_latency_seconds_count", ch.labels...); got != ch.want {
			t.Errorf("airlock_approval_latency_seconds_count%v = %v, want %v", ch.labels, got, ch.want)
		}
	}
	if sum, _ := series(body, "airlock_approval_latency_seconds_sum"); sum <= 0 || sum > 60 {
		t.Errorf("latency sum %v: want the few seconds the needs waited", sum)
	}
}
