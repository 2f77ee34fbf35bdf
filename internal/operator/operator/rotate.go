package operator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/witness"
	"github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/store"
)

// Retention (issue 11): `airlock audit rotate` moves the oldest records
// into a sealed segment file and leaves a signed anchor in the store (see
// store.DB.Rotate); `airlock audit verify --segments DIR` checks segments
// and store as one chain, and the witness against both.

// RotateResult is what Rotate did.
type RotateResult = store.Rotation

// ErrNothingToRotate: no record in the store is before the cut.
var ErrNothingToRotate = store.ErrNothingToRotate

// ErrNoWitnessKey: rotation and segment checks need the witness key (a
// server that ran with this state directory created it).
var ErrNoWitnessKey = errors.New("no witness key")

func (o *API) witnessKey() ([]byte, error) {
	key, err := witness.LoadKey(state.WitnessKeyPath(o.dir))
	if err != nil {
		return nil, fmt.Errorf("reading the witness key %s: %w: %w", state.WitnessKeyPath(o.dir), ErrNoWitnessKey, err)
	}
	return key, nil
}

// Rotate verifies the chain (and refuses a broken one), then moves the
// records up to upTo — or, when olderThan is positive, every record older
// than that — into a new segment in dir, and takes a witness checkpoint of
// the result; by names the operator in the rotation's audit record. The
// operator must have opened the store writable.
func (o *API) Rotate(ctx context.Context, upTo int64, olderThan time.Duration, dir, by string) (*RotateResult, error) {
	key, err := o.witnessKey()
	if err != nil {
		return nil, err
	}
	v, err := o.Verify(ctx)
	if err != nil {
		return nil, err
	}
	if !v.OK {
		return nil, fmt.Errorf("the audit trail does not verify (record %d: %s); nothing rotated", v.FirstBad, v.Problem)
	}
	if olderThan > 0 {
		if upTo, err = o.db.LastBefore(ctx, o.now().Add(-olderThan)); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	rot, err := o.db.Rotate(ctx, store.RotateOptions{UpTo: upTo, Dir: dir, Key: key,
		Instance: witness.NewInstance("cli"), By: by})
	if err != nil {
		return nil, err
	}
	// The rotation record is anchored at once, like a kill switch change.
	if err := checkpointWith(ctx, o.dir, o.db); err != nil {
		return rot, fmt.Errorf("rotated, but the witness checkpoint failed: %w", err)
	}
	return rot, nil
}

// checkAnchor fails v if the store was rotated and its anchor is not signed
// with this state directory's witness key: a store whose oldest records
// were deleted must not pass for a rotated one.
func (o *API) checkAnchor(v AuditVerification, a store.Anchor) AuditVerification {
	v.Rotated = a.First - 1
	if !v.OK || !a.Rotated() {
		return v
	}
	key, err := o.witnessKey()
	if err == nil {
		err = store.CheckAnchor(a, key)
	}
	if err != nil {
		v.OK, v.FirstBad = false, a.First
		v.Problem = fmt.Sprintf("records 1..%d are gone from the store and its anchor cannot be vouched for: %v", a.First-1, err)
	}
	return v
}

// VerifySegments is Verify over the segments in dir and the store as one
// chain: the store from its (signed) anchor, every segment, their order
// from record 1, the seam between the newest segment and the store, and
// the witness against records in segments too.
func (o *API) VerifySegments(ctx context.Context, dir string) (AuditVerification, error) {
	res, err := o.db.Verify(ctx)
	if err != nil {
		return AuditVerification{}, err
	}
	v := AuditVerification{Records: res.Records, OK: res.OK, FirstBad: res.FirstBad, Problem: res.Problem}
	v = o.checkAnchor(v, res.Anchor)
	if !v.OK {
		return v, nil
	}
	key, err := o.witnessKey()
	if err != nil {
		return v, err
	}
	segs, err := store.ReadSegments(dir, key)
	if err == nil {
		err = store.CheckSeam(segs, res.Anchor)
	}
	var se *store.SegmentError
	switch {
	case errors.As(err, &se):
		v.OK, v.FirstBad, v.Problem = false, se.Seq, "segment "+se.Error()
		return v, nil
	case err != nil:
		return v, err
	}
	v.Segments = len(segs)
	o.chain = &segmentedChain{DB: o.db, segs: segs}
	defer func() { o.chain = nil }()
	return o.checkWitness(ctx, v, filepath.Join(o.dir, state.WitnessFile))
}

// segmentedChain is the store with its rotated segments in front: the
// chain the witness checkpoints were taken of.
type segmentedChain struct {
	*store.DB
	segs []*store.Segment
}

func (c *segmentedChain) HashAt(ctx context.Context, seq int64) (string, bool, error) {
	for _, s := range c.segs {
		if h, ok := s.HashAt(seq); ok {
			return h, true, nil
		}
	}
	return c.DB.HashAt(ctx, seq)
}
