//go:build linux

package sandbox_test

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/sandbox"
)

// A pipeline is argv, the pools it may read, the directories it may write
// and its limits. (Not run as a test: it needs root and a trampoline.)
func ExampleSandbox_Run() {
	sb, err := sandbox.New(nil) // re-executes this binary; main must call MaybeRunTrampoline
	if err != nil {
		fmt.Println("refusing to run pipelines:", err)
		return
	}
	res, err := sb.Run(context.Background(), sandbox.Spec{
		Argv:     []string{"/bin/sh", "/etc/airlock/pipelines/csv_summary.sh", "/srv/pools/sales/data.csv", "/var/lib/airlock/runs/r1/out/summary.txt"},
		ReadOnly: []string{"/etc/airlock/pipelines", "/srv/pools/sales"},
		Writable: []string{"/var/lib/airlock/runs/r1/out"},
		Limits:   sandbox.Limits{Wall: 30 * time.Second, MemoryBytes: 256 << 20},
	})
	if err != nil {
		fmt.Println("sandbox error:", err)
		return
	}
	fmt.Println(res.ExitCode, res.KillReason, res.Mechanisms)
}

// Probe is what `airlock doctor` prints.
func ExampleProbe() {
	rep := sandbox.Probe()
	fmt.Print(rep)
	if !rep.Ready() {
		fmt.Println("missing:", rep.Missing())
	}
}
