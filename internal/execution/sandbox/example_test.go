//go:build linux

package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

// A pipeline is argv, the pools it may read (exactly the manifest's files,
// at /pools/<id>), its limits, and what to do with /out once it has ended.
// (Not run as a test: it needs root and a trampoline.)
func ExampleSandbox_Run() {
	sb, err := sandbox.New(nil) // re-executes this binary; main must call MaybeRunTrampoline
	if err != nil {
		fmt.Println("refusing to run pipelines:", err)
		return
	}
	res, err := sb.Run(context.Background(), sandbox.Spec{
		Argv:     []string{"/bin/sh", "/etc/airlock/pipelines/csv_summary.sh", "/pools/sales/data.csv", "/out/summary.txt"},
		ReadOnly: []string{"/etc/airlock/pipelines"},
		Pools:    []sandbox.Pool{{ID: "sales", Dir: "/srv/pools/sales", Files: []string{"data.csv"}}},
		Collect: func(out *os.Root) error {
			b, err := out.ReadFile("summary.txt")
			fmt.Printf("%s", b)
			return err
		},
		Limits: sandbox.Limits{Wall: 30 * time.Second, MemoryBytes: 256 << 20, DiskBytes: 16 << 20},
	})
	if err != nil {
		fmt.Println("sandbox error:", err)
		return
	}
	fmt.Println(res.ExitCode, res.KillReason, res.Mechanisms)
}

// Probe reports, mechanism by mechanism, what a sandbox can use here
// (`airlock doctor` shows the same through runner.CheckPipelines, which
// also self-tests the trampoline).
func ExampleProbe() {
	rep := sandbox.Probe()
	fmt.Print(rep)
	if !rep.Ready() {
		fmt.Println("missing:", rep.Missing())
	}
}
