package runner

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
			if got := storeLocation(tc.configured, "/state"); got != tc.want {
				t.Errorf("storeLocation = %q, want %q", got, tc.want)
			}
		})
	}
	for _, loc := range []string{"mysql://db/x", "redis://cache"} {
		if _, err := openStore(loc, nil); err == nil || !strings.Contains(err.Error(), "only postgres://") {
			t.Errorf("openStore(%q) = %v, want a refusal", loc, err)
		}
		if _, err := openStoreReadOnly(loc); err == nil {
			t.Errorf("openStoreReadOnly(%q) opened", loc)
		}
	}
}
