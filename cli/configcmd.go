package cli

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/internal/config"
)

func runConfig(_ context.Context, args []string, io Streams) error {
	if len(args) == 0 {
		return fmt.Errorf("airlock config check FILE | config schema: %w", ErrUsage)
	}
	switch args[0] {
	case "check":
		if len(args) != 2 {
			return fmt.Errorf("airlock config check FILE: %w", ErrUsage)
		}
		cfg, err := config.Load(args[1])
		if err != nil {
			return err
		}
		// Refuse now what serve would refuse later: missing pool
		// directories, manifests and programs, misspelt capabilities.
		if err := cfg.CheckDeep(); err != nil {
			return err
		}
		fmt.Fprintf(io.Out, "%s: OK (%d pools, %d policies, %d roles)\n", args[1], len(cfg.Pools), len(cfg.Policies), len(cfg.Roles))
		return nil
	case "schema":
		return printSchema(io.Out)
	default:
		return fmt.Errorf("unknown config command %q: %w", args[0], ErrUsage)
	}
}
