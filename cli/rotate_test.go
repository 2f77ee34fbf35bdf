package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAuditRotate: `audit rotate` moves the oldest records into a sealed
// segment; `audit verify` still passes on the store alone (from its signed
// anchor, witness checkpoints of rotated records skipped) and `audit verify
// --segments` passes on segments and store as one chain; a segment edited
// or the newest one removed, or a store whose oldest records were deleted
// without a rotation, fails.
func TestAuditRotate(t *testing.T) {
	setup := func(t *testing.T) (state, segs string) {
		state, segs = usedState(t), filepath.Join(t.TempDir(), "segments")
		drill(t, state, 3) // 6 records, each checkpointed
		out := mustRun(t, "audit", "rotate", "--state", state, "--before", "4", "--out", segs)
		if !strings.Contains(out, "rotated records 1..3") {
			t.Fatalf("rotate: %s", out)
		}
		drill(t, state, 1)
		out = mustRun(t, "audit", "rotate", "--state", state, "--before", "8", "--out", segs)
		if !strings.Contains(out, "rotated records 4..7") {
			t.Fatalf("rotate: %s", out)
		}
		return state, segs
	}
	t.Run("verifies", func(t *testing.T) {
		state, segs := setup(t)
		if out := mustRun(t, "audit", "verify", "--state", state); !strings.Contains(out, "OK: 10 records") || !strings.Contains(out, "rotated into segments") {
			t.Fatalf("verify: %s", out)
		}
		if out := mustRun(t, "audit", "verify", "--state", state, "--segments", segs); !strings.Contains(out, "records 1..7 in 2 sealed segments") {
			t.Fatalf("verify --segments: %s", out)
		}
		if out := mustRun(t, "audit", "rotate", "--state", state, "--before", "3", "--out", segs); !strings.Contains(out, "nothing to rotate") {
			t.Fatalf("rotate below the anchor: %s", out)
		}
	})
	breaks := []struct {
		name   string
		tamper func(t *testing.T, state, segs string)
		args   []string // verify's extra arguments; the segments dir is appended
		want   string
	}{
		{"segment edited", func(t *testing.T, _, segs string) {
			m, _ := filepath.Glob(filepath.Join(segs, "*.auditseg"))
			b, _ := os.ReadFile(m[0])
			i := strings.Index(string(b), "drill 0")
			b[i+6] = '9'
			os.WriteFile(m[0], b, 0o600)
		}, []string{"--segments"}, "hash does not match"},
		{"newest segment removed", func(t *testing.T, _, segs string) {
			m, _ := filepath.Glob(filepath.Join(segs, "*.auditseg"))
			os.Remove(m[len(m)-1])
		}, []string{"--segments"}, "segments end at record 3 but the store starts at 8"},
		{"oldest stored records deleted, anchor moved", func(t *testing.T, state, _ string) {
			rawSQL(t, state, `UPDATE audit_anchor SET first_seq = 9, prev_hash = (SELECT lower(hex(hash)) FROM audit_records WHERE seq = 8);
				DELETE FROM audit_records WHERE seq <= 8`)
		}, nil, "cannot be vouched for"},
	}
	for _, tc := range breaks {
		t.Run(tc.name, func(t *testing.T) {
			state, segs := setup(t)
			tc.tamper(t, state, segs)
			args := append([]string{"audit", "verify", "--state", state}, tc.args...)
			if tc.args != nil {
				args = append(args, segs)
			}
			out, err := run(t, args...)
			if !errors.Is(err, ErrFailed) || !strings.Contains(out, "BROKEN") || !strings.Contains(out, tc.want) {
				t.Fatalf("%v: err=%v, want BROKEN mentioning %q:\n%s", args, err, tc.want, out)
			}
		})
	}
	t.Run("usage", func(t *testing.T) {
		state := usedState(t)
		for _, args := range [][]string{
			{"audit", "rotate", "--state", state, "--out", t.TempDir()},
			{"audit", "rotate", "--state", state, "--before", "3"},
			{"audit", "rotate", "--state", state, "--before", "3", "--older-than", "1h", "--out", t.TempDir()},
		} {
			if _, err := run(t, args...); !errors.Is(err, ErrUsage) {
				t.Errorf("%v: %v, want ErrUsage", args, err)
			}
		}
	})
}
