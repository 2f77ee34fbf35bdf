package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/runner"
)

func runAudit(ctx context.Context, args []string, io Streams) error {
	if len(args) == 0 {
		return fmt.Errorf("airlock audit verify|tail|export [--state DIR]: %w", ErrUsage)
	}
	fs := newFlags("audit "+args[0], io)
	state := fs.String("state", "", "state directory")
	n := fs.Int("n", 20, "tail: number of records")
	follow := fs.Bool("follow", false, "tail, export: keep printing new records")
	asJSON := fs.Bool("json", false, "tail: print JSON lines instead of a table")
	incremental := fs.Bool("incremental", false, "verify: only the records after the last successful verification (its signed marker); a full check without one")
	witnessFile := fs.String("witness", "", "verify: check against this witness file (e.g. a mirror) instead of the state directory's")
	format := fs.String("format", "jsonl", "export: output format (jsonl)")
	from := fs.Int64("from", 0, "export: first seq to print (default 1, or the cursor's)")
	cursor := fs.String("cursor", "", "export: file holding the next seq, read at start and replaced after each flushed batch")
	poll := fs.Duration("poll", 500*time.Millisecond, "tail/export --follow: how often to look for new records")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	op, _, err := openOperator(*state, true)
	if err != nil {
		return err
	}
	defer op.Close()
	switch args[0] {
	case "verify":
		return auditVerify(ctx, op, *witnessFile, *incremental, io)
	case "tail":
		return auditTail(ctx, op, io, *n, *follow, *asJSON, *poll)
	case "export":
		if *from < 0 || *poll <= 0 {
			return fmt.Errorf("--from must be ≥ 1 and --poll positive: %w", ErrUsage)
		}
		return auditExport(ctx, op, io, exportOptions{format: *format, from: *from, cursor: *cursor, follow: *follow, poll: *poll})
	default:
		return fmt.Errorf("unknown audit command %q: %w", args[0], ErrUsage)
	}
}

func auditVerify(ctx context.Context, op *runner.Operator, witnessFile string, incremental bool, io Streams) error {
	var res runner.AuditVerification
	var err error
	switch {
	case witnessFile != "" && incremental:
		return fmt.Errorf("--incremental checks against the state directory's own witness; leave out --witness: %w", ErrUsage)
	case witnessFile != "":
		res, err = op.VerifyAgainst(ctx, witnessFile)
	case incremental:
		res, err = op.VerifyIncremental(ctx)
	default:
		res, err = op.Verify(ctx)
	}
	if err != nil {
		return err
	}
	if !res.OK {
		at := "in its witness"
		if res.FirstBad != 0 {
			at = fmt.Sprintf("at record %d", res.FirstBad)
		}
		fmt.Fprintf(io.Out, "audit trail BROKEN %s: %s (%d records checked)\n", at, res.Problem, res.Records)
		return fmt.Errorf("audit trail %s: %s: %w", at, res.Problem, ErrFailed)
	}
	scope := "hash chain intact"
	if res.From > 0 {
		scope = fmt.Sprintf("hash chain intact after the verified record %d (%d new records checked; `audit verify` checks all)", res.From, res.Records-res.From)
	}
	fmt.Fprintf(io.Out, "audit trail OK: %d records, %s, %d witness checkpoints (last at record %d)\n",
		res.Records, scope, res.Checkpoints, res.Anchored)
	return nil
}

func auditTail(ctx context.Context, op *runner.Operator, io Streams, n int, follow, asJSON bool, poll time.Duration) error {
	recs, err := op.Tail(ctx, n)
	if err != nil {
		return err
	}
	print := func(r *runner.AuditRecord) error {
		if asJSON {
			return json.NewEncoder(io.Out).Encode(r)
		}
		_, err := fmt.Fprintf(io.Out, tailFormat, r.Seq, r.Time.Format(time.RFC3339),
			short(r.Principal, 22), short(r.Tool, 16), short(r.Capability, 22), r.Decision, r.Outcome, short(r.Violation, 22),
			short(r.RuleID, 18), short(oneLine(r.Reason), 60))
		return err
	}
	if !asJSON {
		fmt.Fprintf(io.Out, tailFormat, "SEQ", "TIME", "PRINCIPAL", "TOOL", "CAPABILITY", "DECISION", "OUTCOME", "VIOLATION", "RULE", "REASON")
	}
	last := int64(0)
	for i := range recs {
		if err := print(&recs[i]); err != nil {
			return err
		}
		last = recs[i].Seq
	}
	for follow {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(poll):
		}
		err := op.Scan(ctx, last, func(r *runner.AuditRecord) error {
			last = r.Seq
			return print(r)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// tailFormat lays out one `audit tail` row (and the header).
const tailFormat = "%6v %-20s %-22s %-16s %-22s %-8s %-9s %-22s %-18s %s\n"

// oneLine keeps a reason on its row.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}
