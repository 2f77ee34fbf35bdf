package runner

import (
	"context"
	"testing"

	"github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/operator/operator"
	"github.com/airlock-dev/airlock/store"
)

// TestKillSwitchNextCallRefused (issue 26 item 7): once the order to stop
// has returned — `airlock kill` wrote the file, or another process (an
// instance beside this one) committed the store's setting — the very next
// call is refused, and once the release has returned the next call is
// served again. Cycled, back to back, with no sleep and no deadline:
// each verdict is the next call's, so a loaded machine cannot change it
// (a watcher's poll, starved of CPU, served a call 72 ms after a trip).
func TestKillSwitchNextCallRefused(t *testing.T) {
	r, stateDir := newRunnerWith(t, benchCfgYAML, nil)
	s := openSession(t, r)
	ctx := context.Background()
	next := func(what, wantCode string) {
		t.Helper()
		resp := s.Run(ctx, Call{Tool: "read_pool_file", Args: readArgs})
		if string(resp.Code) != wantCode {
			t.Fatalf("%s: the next call answered %q (%s), want %q", what, resp.Code, resp.Text, wantCode)
		}
	}
	op, err := operator.Open(stateDir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	// A second handle on the store, as another process or instance has.
	other, err := state.OpenStore(state.StoreLocation("", stateDir), &store.Options{Instance: "other"})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	next("before", "")
	for range 20 {
		if _, err := operator.TripKillSwitch(stateDir, "op", "drill"); err != nil {
			t.Fatal(err)
		}
		next("after the file was written", "KILL_SWITCH_ENGAGED")
		if err := op.SetKillSwitch(ctx, false, "op", "drill over"); err != nil {
			t.Fatal(err)
		}
		next("after the release", "")
		if err := other.SetKillSwitch(ctx, true, "op", "from another instance"); err != nil {
			t.Fatal(err)
		}
		next("after another handle set the store's switch", "KILL_SWITCH_ENGAGED")
		if err := other.SetKillSwitch(ctx, false, "op", "over"); err != nil {
			t.Fatal(err)
		}
		next("after another handle released the store's switch", "")
	}
}
