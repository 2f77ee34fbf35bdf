package metrics_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/metrics"
)

// TestNotificationOutcomes: each event's outcome at each receiver kind is
// one sample of airlock_notifications_total; a nil *Metrics records none.
func TestNotificationOutcomes(t *testing.T) {
	var none *metrics.Metrics
	none.Notification("command", "timeout")
	m := metrics.New()
	for _, o := range [][2]string{{"command", "timeout"}, {"command", "delivered"}, {"command", "delivered"}, {"webhook", "dropped"}} {
		m.Notification(o[0], o[1])
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`airlock_notifications_total{outcome="timeout",sink="command"} 1`,
		`airlock_notifications_total{outcome="delivered",sink="command"} 2`,
		`airlock_notifications_total{outcome="dropped",sink="webhook"} 1`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("scrape lacks %s", want)
		}
	}
}
