package cli

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/sandbox"
)

// runDoctor reports which isolation mechanisms this host gives the sandbox
// and whether run_pipeline can work here. Exit status 1 means pipelines
// will be refused (fail closed), and the report says why.
func runDoctor(_ context.Context, args []string, io Streams) error {
	fs := newFlags("doctor", io)
	if err := parse(fs, args); err != nil {
		return err
	}
	rep := sandbox.Probe()
	fmt.Fprint(io.Out, rep.String())
	if !rep.Ready() {
		fmt.Fprintf(io.Out, "\nrun_pipeline: UNAVAILABLE — missing %v; pipelines are refused until this is fixed.\n", rep.Missing())
		return fmt.Errorf("sandbox not ready: %w", ErrFailed)
	}
	fmt.Fprintln(io.Out, "\nrun_pipeline: available (network, filesystem and resource confinement all active).")
	return nil
}
