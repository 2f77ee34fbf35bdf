package derived

import (
	"testing"
	"time"
)

func TestRetention(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		r       Retention
		count   int
		created time.Time
		expired bool
	}{
		{"defaults", Retention{}, DefaultRetentionCount, now.Add(-365 * 24 * time.Hour), false},
		{"count capped", Retention{Count: 5000}, maxDerivedPools, now, false},
		{"within age", Retention{Count: 3, MaxAge: time.Hour}, 3, now.Add(-59 * time.Minute), false},
		{"past age", Retention{MaxAge: time.Hour}, DefaultRetentionCount, now.Add(-61 * time.Minute), true},
		{"recorded before ages existed", Retention{MaxAge: time.Hour}, DefaultRetentionCount, time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.count(); got != tc.count {
				t.Errorf("count() = %d, want %d", got, tc.count)
			}
			if got := tc.r.expired(tc.created, now); got != tc.expired {
				t.Errorf("expired(%v) = %v, want %v", tc.created, got, tc.expired)
			}
		})
	}
}
