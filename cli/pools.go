package cli

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/sources"
)

func runPools(ctx context.Context, args []string, io Streams) error {
	if len(args) == 0 {
		return fmt.Errorf("airlock pools manifest DIR | pools verify [--config FILE] [--state DIR]: %w", ErrUsage)
	}
	switch args[0] {
	case "manifest":
		if len(args) != 2 {
			return fmt.Errorf("airlock pools manifest DIR: %w", ErrUsage)
		}
		m, err := sources.BuildManifest(args[1])
		if err != nil {
			return err
		}
		_, err = m.WriteTo(io.Out)
		return err
	case "verify":
		return poolsVerify(args[1:], io)
	default:
		return fmt.Errorf("unknown pools command %q: %w", args[0], ErrUsage)
	}
}

func poolsVerify(args []string, io Streams) error {
	fs := newFlags("pools verify", io)
	cfgPath := fs.String("config", "", "configuration file (default: the embedded demo)")
	state := fs.String("state", "", "state directory (the demo pools are written there)")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, _, release, err := loadConfigAndState(*cfgPath, *state)
	if err != nil {
		return err
	}
	defer release()
	reg, err := sources.OpenRegistry(cfg.Pools, nil)
	if err != nil {
		return err
	}
	defer reg.Close()
	bad := 0
	for _, rep := range reg.Verify() {
		status := "OK"
		if !rep.OK {
			status, bad = "FAILED", bad+1
		}
		fmt.Fprintf(io.Out, "pool %s: %s (%d files)\n", rep.PoolID, status, rep.Files)
		for _, p := range rep.Problems {
			fmt.Fprintf(io.Out, "  %s %s %s\n", p.Kind, p.Path, p.Detail)
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d pool(s) failed verification: %w", bad, ErrFailed)
	}
	return nil
}
