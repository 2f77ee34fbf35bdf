package benchpeers

import "testing"

// TestPeersHarnessRun is the harnesses' smoke test: each comparison at a
// tiny scale, so that make bench is not the first place a broken harness
// shows. Sides whose programs are missing (bin/airlock, the filesystem
// server in e2e/node_modules) are skipped, as in make bench.
func TestPeersHarnessRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	for name, f := range map[string]func(testing.TB, scale, func(float64, string)){
		"HTTP": peersHTTP, "SessionMemory": peersSessionMemory, "Stdio": peersStdio, "Pipeline": peersPipeline,
		"PagedRead": peersPagedRead, "SessionLoad": peersSessionLoad,
	} {
		t.Run(name, func(t *testing.T) {
			f(t, smoke, func(v float64, unit string) {
				if v <= 0 {
					t.Errorf("%s = %v", unit, v)
				}
			})
		})
	}
}
