package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/kit/textcut"
	"github.com/airlock-dev/airlock/internal/operator/operator"
)

func runAudit(ctx context.Context, args []string, io Streams) error {
	if len(args) == 0 {
		return fmt.Errorf("airlock audit verify|tail|export|rotate [--state DIR]: %w", ErrUsage)
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
	segments := fs.String("segments", "", "verify: also check the rotated segments in this directory, as one chain with the store")
	before := fs.Int64("before", 0, "rotate: move the records before this seq")
	olderThan := fs.Duration("older-than", 0, "rotate: move the records older than this (e.g. 720h)")
	out := fs.String("out", "", "rotate: directory that receives the sealed segment")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	if args[0] == "rotate" {
		return auditRotate(ctx, *state, *before, *olderThan, *out, io)
	}
	op, _, err := openOperator(*state, true)
	if err != nil {
		return err
	}
	defer op.Close()
	switch args[0] {
	case "verify":
		if *segments != "" {
			if *witnessFile != "" || *incremental {
				return fmt.Errorf("--segments checks the whole chain against the state directory's witness: %w", ErrUsage)
			}
			res, err := op.VerifySegments(ctx, *segments)
			if err != nil {
				return err
			}
			return reportVerify(res, checkedStore(op, *state), io)
		}
		return auditVerify(ctx, op, *witnessFile, *incremental, checkedStore(op, *state), io)
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

func auditVerify(ctx context.Context, op *operator.API, witnessFile string, incremental bool, where string, io Streams) error {
	var res operator.AuditVerification
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
	return reportVerify(res, where, io)
}

// reportVerify prints a verification's verdict and what it checked (the
// store, the witness file, the state directory and where that came from:
// a stdio client's server may write to another one, issue 24 item 4); a
// broken trail is ErrFailed.
func reportVerify(res operator.AuditVerification, where string, io Streams) error {
	checked := fmt.Sprintf("  checked: %s, witness %s\n", where, res.Witness)
	if !res.OK {
		at := "in its witness"
		if res.FirstBad != 0 {
			at = fmt.Sprintf("at record %d", res.FirstBad)
		}
		fmt.Fprintf(io.Out, "audit trail BROKEN %s: %s (%d records checked)\n%s", at, res.Problem, res.Records, checked)
		return fmt.Errorf("audit trail %s: %s: %w", at, res.Problem, ErrFailed)
	}
	scope := "hash chain intact"
	if res.From > 0 {
		scope = fmt.Sprintf("hash chain intact after the verified record %d (%d new records checked; `audit verify` checks all)", res.From, res.Records-res.From)
	}
	switch {
	case res.Segments > 0:
		scope += fmt.Sprintf(", records 1..%d in %d sealed segments", res.Rotated, res.Segments)
	case res.Rotated > 0:
		scope += fmt.Sprintf(" from record %d (1..%d were rotated into segments: check them with --segments DIR)", res.Rotated+1, res.Rotated)
	}
	fmt.Fprintf(io.Out, "audit trail OK: %d records, %s, %d witness checkpoints (last at record %d)\n%s",
		res.Records, scope, res.Checkpoints, res.Anchored, checked)
	return nil
}

// auditRotate is `airlock audit rotate`: exactly one of --before and
// --older-than, and --out.
func auditRotate(ctx context.Context, state string, before int64, olderThan time.Duration, out string, io Streams) error {
	if out == "" || (before > 0) == (olderThan > 0) || before < 0 || olderThan < 0 {
		return fmt.Errorf("airlock audit rotate --before SEQ | --older-than DURATION --out DIR [--state DIR]: %w", ErrUsage)
	}
	op, _, err := openOperator(state, false)
	if err != nil {
		return err
	}
	defer op.Close()
	rot, err := op.Rotate(ctx, before-1, olderThan, out, operatorName())
	if errors.Is(err, operator.ErrNothingToRotate) {
		fmt.Fprintln(io.Out, "nothing to rotate: no record in the store is that old")
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(io.Out, "rotated records %d..%d into %s (head %s); the store now starts at record %d\n",
		rot.First, rot.Last, rot.Segment, rot.Head, rot.Last+1)
	return nil
}

func auditTail(ctx context.Context, op *operator.API, io Streams, n int, follow, asJSON bool, poll time.Duration) error {
	recs, err := op.Tail(ctx, n)
	if err != nil {
		return err
	}
	print := func(r *audit.Record) error {
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
		err := op.Scan(ctx, last, func(r *audit.Record) error {
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

// short cuts s to at most n bytes, "…" marking a cut, never inside a
// character (a byte cut printed half a rune to the terminal).
func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut, _ := textcut.Prefix(s, n-1)
	return cut + "…"
}

// listCell is an agent's text as one cell of a listing: its line breaks
// and tabs folded to single spaces (a user request holding "\n" then a
// made-up row would otherwise print that row into the operator's
// `approvals list`), cut to n bytes.
func listCell(s string, n int) string { return short(oneLine(s), n) }
