package witness

import (
	"context"
	"fmt"
	"strings"
)

// Finding is what [Check] found wrong, with the checkpoint it concerns.
type Finding struct {
	// Line is the witness line (1-based) the finding is about; 0 if none.
	Line int
	// Seq is the first seq of the chain that is missing or differs.
	Seq int64
	// Err is one of ErrRolledBack, ErrRewritten, ErrKillReleased,
	// ErrUnanchored.
	Err error
	// Detail explains it to an operator.
	Detail string
}

func (f *Finding) Error() string { return fmt.Sprintf("%v: %s", f.Err, f.Detail) }
func (f *Finding) Unwrap() error { return f.Err }

var genesis = strings.Repeat("0", 64)

// Check compares the checkpoints of a witness file (from [ReadFile]) with
// the chain and the kill-switch state now. It returns a *Finding for the
// first mismatch, another error if the chain cannot be read, nil if the
// chain is consistent with every checkpoint:
//
//   - checkpoint seqs never decrease, and one seq is never witnessed with
//     two heads (a database restored or rewritten while a server ran);
//   - every witnessed seq is still in the chain (ErrRolledBack: records cut
//     off the end, every record deleted, an older copy restored) with the
//     witnessed hash (ErrRewritten);
//   - a chain with records has at least one checkpoint (ErrUnanchored);
//   - if the last checkpoint says the kill switch was engaged, it still is
//     (ErrKillReleased: a release that bypassed airlock kill, e.g. by
//     restoring an older state).
//
// The chain's own integrity (links, hashes) is the store's Verify; Check
// relies on it to extend a checkpoint's hash to every record before it.
func Check(ctx context.Context, cps []Checkpoint, chain Chain, killNow bool) error {
	headSeq, _, err := chain.Head(ctx)
	if err != nil {
		return fmt.Errorf("witness: reading chain head: %w", err)
	}
	if len(cps) == 0 {
		if headSeq > 0 {
			return &Finding{Seq: 1, Err: ErrUnanchored,
				Detail: fmt.Sprintf("the chain has %d records but the witness has no checkpoint", headSeq)}
		}
		return nil
	}
	for i := range cps {
		c, line := cps[i], i+1
		if i > 0 {
			p := cps[i-1]
			if c.Seq < p.Seq {
				return &Finding{Line: line, Seq: c.Seq + 1, Err: ErrRolledBack,
					Detail: fmt.Sprintf("witness line %d names seq %d after line %d named seq %d (the database went back while in use)", line, c.Seq, i, p.Seq)}
			}
			if c.Seq == p.Seq {
				if c.Head != p.Head {
					return &Finding{Line: line, Seq: c.Seq, Err: ErrRewritten,
						Detail: fmt.Sprintf("witness lines %d and %d name two different heads for seq %d", i, line, c.Seq)}
				}
				continue // already checked against the chain
			}
		}
		if err := checkOne(ctx, c, line, headSeq, chain); err != nil {
			return err
		}
	}
	if last := cps[len(cps)-1]; last.Kill && !killNow {
		return &Finding{Line: len(cps), Seq: last.Seq, Err: ErrKillReleased,
			Detail: fmt.Sprintf("witness line %d (%s) says the kill switch is engaged, but it is released and no checkpoint records the release", len(cps), last.Time.Format("2006-01-02T15:04:05Z"))}
	}
	return nil
}

func checkOne(ctx context.Context, c Checkpoint, line int, headSeq int64, chain Chain) error {
	if c.Seq == 0 {
		if c.Head != genesis {
			return &Finding{Line: line, Seq: 1, Err: ErrRewritten, Detail: fmt.Sprintf("witness line %d: empty chain with a non-genesis head", line)}
		}
		return nil
	}
	if c.Seq > headSeq {
		return &Finding{Line: line, Seq: headSeq + 1, Err: ErrRolledBack,
			Detail: fmt.Sprintf("the chain ends at seq %d but witness line %d (%s, %s) saw seq %d: records were cut off the end, deleted, or an older copy of the database restored",
				headSeq, line, c.Time.Format("2006-01-02T15:04:05Z"), c.Instance, c.Seq)}
	}
	h, ok, err := chain.HashAt(ctx, c.Seq)
	if err != nil {
		return fmt.Errorf("witness: reading record %d: %w", c.Seq, err)
	}
	if !ok {
		// Rotated out of the store into a segment, and the caller did
		// not hand over the segments: nothing to compare with here. The
		// store's anchor, which says so, is signed with the witness key
		// (store.CheckAnchor): a deletion cannot pass for a rotation.
		if r, isRotated := chain.(RotatedChain); isRotated {
			first, err := r.RotatedBefore(ctx)
			if err != nil {
				return fmt.Errorf("witness: reading the chain's anchor: %w", err)
			}
			if c.Seq < first {
				return nil
			}
		}
		return &Finding{Line: line, Seq: c.Seq, Err: ErrRolledBack,
			Detail: fmt.Sprintf("record %d, witnessed on line %d, is missing", c.Seq, line)}
	}
	if h != c.Head {
		return &Finding{Line: line, Seq: c.Seq, Err: ErrRewritten,
			Detail: fmt.Sprintf("record %d has another hash than witness line %d saw: the chain was rewritten from there or before", c.Seq, line)}
	}
	return nil
}
