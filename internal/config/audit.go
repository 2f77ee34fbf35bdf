package config

import (
	"fmt"
	"time"
)

// Audit tunes how the audit trail is anchored outside its database (see
// package witness): how often the server appends a signed checkpoint of the
// chain head, and where else it appends them.
type Audit struct {
	CheckpointEveryRecords int64 `json:"checkpoint_every_records,omitempty" jsonschema:"minimum=0,description=Append a witness checkpoint after this many new audit records (default 64). Records after the last checkpoint are not anchored."`
	CheckpointIntervalMS   int64 `json:"checkpoint_interval_ms,omitempty" jsonschema:"minimum=0,description=Also checkpoint when this many milliseconds passed and the chain or kill switch moved (default 5000)."`
	// WitnessMirrors are further witness files, e.g. on another file system
	// or an append-only (chattr +a) file the audited host cannot rewrite.
	WitnessMirrors []string `json:"witness_mirrors,omitempty" jsonschema:"description=Further witness files every checkpoint is appended to (relative to the config file); check one with 'airlock audit verify --witness FILE'."`
}

// CheckpointInterval is the checkpoint interval as a duration (0 = default).
func (a Audit) CheckpointInterval() time.Duration {
	return time.Duration(a.CheckpointIntervalMS) * time.Millisecond
}

func (c *Config) resolveAuditPaths() {
	for i, m := range c.Audit.WitnessMirrors {
		c.Audit.WitnessMirrors[i] = c.rel(m)
	}
}

func (c *Config) checkAudit() error {
	if c.Audit.CheckpointEveryRecords < 0 {
		return c.at("$.audit.checkpoint_every_records", fmt.Errorf("negative: %w", ErrInvalid))
	}
	if c.Audit.CheckpointIntervalMS < 0 {
		return c.at("$.audit.checkpoint_interval_ms", fmt.Errorf("negative: %w", ErrInvalid))
	}
	for i, m := range c.Audit.WitnessMirrors {
		if m == "" {
			return c.at(fmt.Sprintf("$.audit.witness_mirrors[%d]", i), fmt.Errorf("empty path: %w", ErrInvalid))
		}
	}
	return nil
}
