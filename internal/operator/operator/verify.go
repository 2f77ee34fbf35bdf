package operator

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/airlock-dev/airlock/internal/audit/witness"
	"github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/store"
)

// AuditVerification is the result of checking the hash chain and its
// witness.
type AuditVerification struct {
	// Records is how many records the audit log holds.
	Records int64
	// OK is true when the chain verifies and matches every checkpoint.
	OK bool
	// FirstBad is the first record missing, altered or not vouched for (0
	// when OK, or when the problem is in the witness file itself).
	FirstBad int64
	// Problem says what is wrong, for an operator; "" when OK.
	Problem string
	// Checkpoints is how many witness checkpoints were checked; Anchored
	// the seq the last of them names.
	Checkpoints int
	Anchored    int64
	// From is the seq of the verification marker an incremental check
	// started after (0: the whole chain was checked).
	From int64
	// Rotated is how many records were rotated out into segments; Segments
	// how many segment files were checked (audit verify --segments).
	Rotated  int64
	Segments int
	// Witness is the witness file the chain was checked against, so a
	// report names what it checked (issue 24 item 4).
	Witness string
}

// Verify checks the whole hash chain and then the chain against the
// witness file in the state directory.
func (o *API) Verify(ctx context.Context) (AuditVerification, error) {
	return o.VerifyAgainst(ctx, filepath.Join(o.dir, state.WitnessFile))
}

// VerifyAgainst is Verify with another witness file, e.g. a mirror.
func (o *API) VerifyAgainst(ctx context.Context, witnessFile string) (AuditVerification, error) {
	res, err := o.db.Verify(ctx)
	if err != nil {
		return AuditVerification{}, err
	}
	return o.finishVerify(ctx, res, 0, witnessFile)
}

// finishVerify checks the witness after a chain check, and on success
// leaves the verification marker an incremental check starts from.
func (o *API) finishVerify(ctx context.Context, res store.VerifyResult, from int64, witnessFile string) (AuditVerification, error) {
	v := AuditVerification{Records: res.Records, OK: res.OK, FirstBad: res.FirstBad, Problem: res.Problem, From: from, Witness: witnessFile}
	v = o.checkAnchor(v, res.Anchor)
	if !v.OK {
		return v, nil
	}
	v, err := o.checkWitness(ctx, v, witnessFile)
	if err == nil && v.OK {
		o.writeVerifiedMark(ctx)
	}
	return v, err
}

func (o *API) checkWitness(ctx context.Context, v AuditVerification, witnessFile string) (AuditVerification, error) {
	cps, err := o.readWitness(witnessFile)
	v.Witness, v.Checkpoints = witnessFile, len(cps)
	if len(cps) > 0 {
		v.Anchored = cps[len(cps)-1].Seq
	}
	if err == nil {
		var chain witness.Chain = o.db
		if o.chain != nil {
			chain = o.chain
		}
		err = witness.Check(ctx, cps, chain, currentKill(ctx, o.dir, o.db))
	}
	var f *witness.Finding
	var le *witness.LineError
	switch {
	case errors.As(err, &f):
		v.OK, v.FirstBad, v.Problem = false, f.Seq, f.Detail
	case errors.As(err, &le) && le.Line == 1 && errors.Is(err, witness.ErrBadMAC):
		// Not one checkpoint verifies: most often the witness of another
		// state directory (--witness given the wrong file, or a key from
		// elsewhere), which "signature does not match" alone hides.
		v.OK, v.Problem = false, fmt.Sprintf("witness: %v: its first checkpoint is not signed with this state directory's key (%s), so %s is another state directory's witness, or forged",
			err, state.WitnessKeyPath(o.dir), witnessFile)
	case errors.As(err, &le), errors.Is(err, witness.ErrBadKey):
		v.OK, v.Problem = false, "witness: "+err.Error()
	case err != nil:
		return v, err
	}
	return v, nil
}

// readWitness reads the checkpoints of witnessFile. Checkpoints without
// their key cannot be vouched for, and are reported as such.
func (o *API) readWitness(witnessFile string) ([]witness.Checkpoint, error) {
	key, err := witness.LoadKey(state.WitnessKeyPath(o.dir))
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(witnessFile); errors.Is(serr, fs.ErrNotExist) {
			return nil, nil // never anchored; Check decides if it had to be
		}
		return nil, fmt.Errorf("the witness key is missing (%s): %w", filepath.Base(state.WitnessKeyPath(o.dir)), witness.ErrBadKey)
	}
	if err != nil {
		return nil, err
	}
	return witness.ReadFile(witnessFile, key)
}
