package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// runUpstreamsStatus is `airlock upstreams status` (issue 23 item 5):
// each upstream's warm sessions, restarts, calls, errors, last error and
// latest call latency, as every serving instance last wrote them to the
// store. It lists nothing and starts nothing.
func runUpstreamsStatus(ctx context.Context, args []string, io Streams) error {
	fs := newFlags("upstreams status", io)
	state := fs.String("state", "", "state directory")
	cfgPath := fs.String("config", "", "configuration naming the upstreams (default: the embedded demo, as for serve)")
	jsonOut := fs.Bool("json", false, "print the status as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("airlock upstreams status [--config FILE] [--json] [--state DIR]: %w", ErrUsage)
	}
	op, cfg, closeAll, err := openConfigured(*state, *cfgPath, true)
	if err != nil {
		return err
	}
	defer closeAll()
	st, err := op.UpstreamStatus(ctx, cfg)
	if err != nil {
		return err
	}
	if *jsonOut {
		enc := json.NewEncoder(io.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	w := newTable(io.Out)
	fmt.Fprintln(w, "UPSTREAM\tTRANSPORT\tSESSIONS\tWARM\tRESTARTS\tCALLS\tERRORS\tLATENCY\tLAST ERROR")
	for _, s := range st {
		last := "-"
		if s.LastError != "" {
			last = s.LastErrAt.UTC().Format("2006-01-02T15:04:05Z") + " " + s.LastError
		}
		transport := s.Transport
		if !s.Configured {
			transport = "(not configured)"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n", s.Upstream, transport, dash(s.Sessions), s.Warm, s.Restarts,
			s.Calls, s.Errors, s.Latency, last)
	}
	return w.Flush()
}

// openConfigured opens the operator's API on an existing state directory
// with the configuration at cfgPath (the embedded demo if empty); closeAll
// closes both.
func openConfigured(stateFlag, cfgPath string, readOnly bool) (op *operator.API, cfg *config.Config, closeAll func(), err error) {
	dir, err := existingState(stateFlag)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg, release, err := loadConfig(cfgPath)
	if err != nil {
		return nil, nil, nil, err
	}
	if op, err = operator.Open(dir, readOnly); err != nil {
		release()
		return nil, nil, nil, err
	}
	return op, cfg, func() { op.Close(); release() }, nil
}
