package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/audit/exportcursor"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

// exportOptions are `audit export`'s flags.
type exportOptions struct {
	format string
	from   int64  // first seq to print; 0 = from the cursor, else 1
	cursor string // file holding the next seq, saved after each flushed batch
	follow bool
	poll   time.Duration
}

// exportBatch bounds how many records are printed between two flushes
// (and cursor saves), so a first export of a long chain makes progress a
// restart keeps.
const exportBatch = 1000

// auditExport prints the records from opts.from (or the cursor) on as
// JSON lines, each with its seq, in chain order; with follow it keeps
// printing new ones until ctx ends. The output is flushed, then the
// cursor saved, after every batch and on every way out — a stop by
// SIGINT/SIGTERM included — so a restart with the same cursor (or --from
// last seq + 1) neither skips nor repeats a record (TestAuditExportResumes).
// The chain has no gaps: seqs are assigned inside the write transaction.
func auditExport(ctx context.Context, op *operator.API, io Streams, opts exportOptions) (err error) {
	if opts.format != "jsonl" {
		return fmt.Errorf("--format %q (want jsonl): %w", opts.format, ErrUsage)
	}
	next := opts.from
	if opts.cursor != "" {
		saved, found, err := exportcursor.Load(opts.cursor)
		switch {
		case err != nil:
			return err
		case found && opts.from != 0 && opts.from != saved:
			return fmt.Errorf("--from %d and --cursor %s (next %d) disagree; give one: %w", opts.from, opts.cursor, saved, ErrUsage)
		case found:
			next = saved
		}
	}
	if next < 1 {
		next = 1
	}
	out := bufio.NewWriterSize(io.Out, 64<<10)
	enc := json.NewEncoder(out)
	saved := next
	// commit flushes what was printed, then moves the cursor past it.
	commit := func() error {
		if err := out.Flush(); err != nil {
			return fmt.Errorf("writing the export: %w", err)
		}
		if opts.cursor != "" && next != saved {
			if err := exportcursor.Save(opts.cursor, next); err != nil {
				return err
			}
			saved = next
		}
		return nil
	}
	defer func() { err = errors.Join(err, commit()) }()
	var pending int
	print := func(r *audit.Record) error {
		if r.Seq != next {
			// Never print around a gap or a repeat: the resume point
			// would be wrong from here on.
			return fmt.Errorf("audit chain: record %d where %d was expected", r.Seq, next)
		}
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("encoding record %d: %w", r.Seq, err)
		}
		next++
		if pending++; pending >= exportBatch {
			pending = 0
			return commit()
		}
		return nil
	}
	for {
		if err := op.Scan(ctx, next-1, print); err != nil {
			if ctx.Err() != nil {
				return nil // stopped: the deferred commit keeps what was printed
			}
			return err
		}
		if err := commit(); err != nil {
			return err
		}
		if !opts.follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(opts.poll):
		}
	}
}
