package state

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestStoreLocation: $AIRLOCK_STORE, then the configured store, then the
// SQLite file in the state directory; a URL of another database is refused
// rather than becoming a file named after it.
func TestStoreLocation(t *testing.T) {
	const pg = "postgres://airlock@db/airlock"
	tests := []struct {
		name, env, configured, want string
	}{
		{"default", "", "", filepath.Join("/state", DBFile)},
		{"configured", "", pg, pg},
		{"environment wins", "postgresql://other@db/x", pg, "postgresql://other@db/x"},
		{"environment alone", pg, "", pg},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(StoreEnv, tc.env)
			if got := StoreLocation(tc.configured, "/state"); got != tc.want {
				t.Errorf("StoreLocation = %q, want %q", got, tc.want)
			}
		})
	}
	for _, loc := range []string{"mysql://db/x", "redis://cache"} {
		if _, err := OpenStore(loc, nil); err == nil || !strings.Contains(err.Error(), "only postgres://") {
			t.Errorf("OpenStore(%q) = %v, want a refusal", loc, err)
		}
		if _, err := OpenStoreReadOnly(loc); err == nil {
			t.Errorf("OpenStoreReadOnly(%q) opened", loc)
		}
	}
}
