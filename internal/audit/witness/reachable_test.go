package witness

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestReachable (issue 12 item 2, /readyz): a mirror deleted or replaced
// under the log (an unmounted or rotated mirror) makes the log unreachable.
func TestReachable(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(t *testing.T, mirror string)
	}{
		{"deleted", func(t *testing.T, mirror string) {
			if err := os.Remove(mirror); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced", func(t *testing.T, mirror string) {
			tmp := mirror + ".new"
			if err := os.WriteFile(tmp, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, mirror); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			mirror := filepath.Join(dir, "mirror.log")
			key := make([]byte, KeySize)
			l, err := OpenLog(filepath.Join(dir, "witness.log"), key, &Options{Mirrors: []string{mirror}})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if err := l.Reachable(); err != nil {
				t.Fatalf("fresh log: %v", err)
			}
			tt.break_(t, mirror)
			if err := l.Reachable(); !errors.Is(err, ErrUnreachable) {
				t.Fatalf("after the mirror was %s: %v, want ErrUnreachable", tt.name, err)
			}
		})
	}
}
