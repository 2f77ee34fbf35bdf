package runner

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/killswitch"
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
	before := r.anchor.kill.Stats()
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
	if n := r.anchor.kill.Stats() - before; n >= calls || n > budget {
		t.Errorf("%d calls in %v stat'ed the kill switch file %d times (want at most %d: the watcher's, not one per call)", calls, elapsed, n, budget)
	}
	if _, err := TripKillSwitch(state, "op", "drill"); err != nil {
		t.Fatal(err)
	}
	tripped := time.Now()
	for {
		resp := s.Run(ctx, Call{Tool: "read_pool_file", Args: readArgs})
		if resp.IsError && resp.Code == "KILL_SWITCH_ENGAGED" {
			break
		}
		if time.Since(tripped) > 50*time.Millisecond {
			t.Fatalf("calls still served %v after the trip: %+v", time.Since(tripped), resp)
		}
	}
	t.Logf("refused %v after the trip", time.Since(tripped))
}
