package runner

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/internal/policy/killswitch"
)

// TestKillSwitchReadFromMemory: the per-call check reads the kill switch
// from memory (issue 11): calls do not stat the switch file each — only
// the watcher looks at it, on change events and once per interval — and
// tripping it still refuses the next calls within 50 ms.
func TestKillSwitchReadFromMemory(t *testing.T) {
	r, state := newRunnerWith(t, benchCfgYAML, nil)
	s := openSession(t, r)
	ctx := context.Background()
	const calls = 200
	before := r.anchor.FileReads()
	start := time.Now()
	for range calls {
		if resp := s.Run(ctx, Call{Tool: "read_pool_file", Args: readArgs}); resp.IsError {
			t.Fatal(resp.Text)
		}
	}
	// The watcher stats once per interval (and on events): at most about
	// elapsed/interval times, plus slack for the interval's jitter.
	elapsed := time.Since(start)
	budget := int64(elapsed/killswitch.DefaultInterval) + 5
	if n := r.anchor.FileReads() - before; n >= calls || n > budget {
		t.Errorf("%d calls in %v stat'ed the kill switch file %d times (want at most %d: the watcher's, not one per call)", calls, elapsed, n, budget)
	}
	if _, err := operator.TripKillSwitch(state, "op", "drill"); err != nil {
		t.Fatal(err)
	}
	// Every call that starts more than 50 ms after the trip is refused
	// (a call's own duration, its audit fsync on a loaded disk, does not
	// count against the bound).
	tripped := time.Now()
	for {
		start := time.Now()
		resp := s.Run(ctx, Call{Tool: "read_pool_file", Args: readArgs})
		if resp.IsError && resp.Code == "KILL_SWITCH_ENGAGED" {
			t.Logf("first refused call started %v after the trip", start.Sub(tripped))
			break
		}
		if lag := start.Sub(tripped); lag > 50*time.Millisecond {
			t.Fatalf("a call started %v after the trip was served: %+v", lag, resp)
		}
	}
}
