package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/airlock-dev/airlock/internal/execution/pipelinehost"
	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

// runDoctor reports what `airlock serve` with the same --config and
// --state will do with run_pipeline on this host. It asks serve's own
// decision (pipelinehost.Check, the code serve runs at start: the
// sandbox's probe and its self-test through this very binary), so a binary
// that serve would refuse — built with cgo, say — is never called ready
// here. Exit status 1 means every run_pipeline call will be refused, and
// the report says why; a configuration without pipelines exits 0.
func runDoctor(_ context.Context, args []string, io Streams) error {
	fs := newFlags("doctor", io)
	cfgPath := fs.String("config", "", "configuration file (default: the embedded demo, as for serve)")
	state := fs.String("state", "", "state directory (as for serve)")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, dir, release, err := loadConfigAndState(*cfgPath, *state)
	if err != nil {
		return err
	}
	defer release()
	rep, unavailable := pipelinehost.Check(cfg, dir, nil)
	if len(rep.Mechanisms) == 0 {
		// serve does not get as far as the sandbox for this configuration
		// (no pipelines, an unreachable directory); show the host anyway.
		fmt.Fprintln(io.Out, "serve does not start the sandbox for this configuration; what this host provides:")
		rep = hostReport()
	}
	fmt.Fprint(io.Out, rep.String())
	if errors.Is(unavailable, pipelinehost.ErrNoPipelines) {
		// Nothing configured can fail; the report above is what pipelines
		// declared later would get.
		fmt.Fprintf(io.Out, "\nrun_pipeline: no pipelines are configured in %s (declare them under pipelines:).\n", configName(*cfgPath))
		return nil
	}
	if unavailable != nil {
		fmt.Fprintf(io.Out, "\nrun_pipeline: UNAVAILABLE — %v\nairlock serve (config %s, state %s) refuses every pipeline until this is fixed.\n", unavailable, configName(*cfgPath), dir)
		if sandbox.BuiltWithCgo() {
			fmt.Fprintln(io.Out, "This binary was built with cgo, which the sandbox refuses: rebuild it with `make build` or `CGO_ENABLED=0 go build -o bin/airlock .`.")
		}
		return fmt.Errorf("run_pipeline unavailable: %w", ErrFailed)
	}
	fmt.Fprintln(io.Out, "\nrun_pipeline: available (network, filesystem and resource confinement all active, self-test passed).")
	return nil
}

// hostReport is what sandbox.New finds on this host with default options.
func hostReport() sandbox.Report {
	sb, err := sandbox.New(nil)
	if sb != nil {
		return sb.Report()
	}
	var ue *sandbox.UnavailableError
	if errors.As(err, &ue) {
		return ue.Report
	}
	return sandbox.Report{}
}

func configName(path string) string {
	if path == "" {
		return "(embedded demo)"
	}
	return path
}
