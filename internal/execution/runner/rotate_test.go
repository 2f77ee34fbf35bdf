package runner

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/internal/config"
	statedir "github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// TestRunnerRefusesForgedAnchor: a server does not start on a store whose
// oldest (witnessed) records were deleted behind an anchor written by
// hand — it would pass for a rotation — while it starts on a really
// rotated one (audit rotate: the anchor is signed with the witness key).
func TestRunnerRefusesForgedAnchor(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (*config.Config, string) {
		cfg, state := checkpointEvery(t, 1)
		r, err := New(cfg, state, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := openSession(t, r)
		for range 8 {
			s.Run(ctx, Call{Tool: "list_pools"})
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		return cfg, state
	}
	t.Run("forged", func(t *testing.T) {
		cfg, state := setup(t)
		if _, err := (&rawLock{}).exec(filepath.Join(state, statedir.DBFile), `INSERT INTO audit_anchor (id, first_seq, prev_hash, mac)
			SELECT 1, 6, lower(hex(prev_hash)), 'forged' FROM audit_records WHERE seq = 6;
			DELETE FROM audit_records WHERE seq < 6`); err != nil {
			t.Fatal(err)
		}
		wantRolledBack(t, cfg, state, "a store whose witnessed records were deleted")
	})
	t.Run("rotated", func(t *testing.T) {
		cfg, state := setup(t)
		op, err := operator.Open(state, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := op.Rotate(ctx, 5, 0, t.TempDir(), "test"); err != nil {
			t.Fatal(err)
		}
		op.Close()
		r, err := New(cfg, state, nil)
		if err != nil {
			t.Fatalf("runner refused a rotated store: %v", err)
		}
		r.Close()
	})
}
