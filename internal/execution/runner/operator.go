package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/witness"
	"github.com/airlock-dev/airlock/internal/policy/killswitch"

	"github.com/airlock-dev/airlock/attribution"
	"github.com/airlock-dev/airlock/store"
)

// AuditRecord is one record of the audit trail.
type AuditRecord = store.Record

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
}

// Operator is the operator's handle on a state directory, for commands run
// beside (or without) a live server: reading and verifying the audit trail
// and tripping the kill switch. Every change it makes is itself audited.
type Operator struct {
	db  *store.DB
	dir string
	now func() time.Time
	// transport is what the records of its changes name as the way the
	// order came in: "cli", or "console" for the web console.
	transport string
	// shared: db belongs to a running Runner (Runner.Operator); Close
	// leaves it open.
	shared bool
	up     *upstreams // created on first use

	trampoline string // sandbox trampoline for stdio upstreams; "" = this executable
	// chain, when set, is what the witness is checked against instead of
	// db (the store with its rotated segments, rotate.go).
	chain witness.Chain
}

// OpenOperator opens the store in stateDir; readOnly opens it without the
// ability to write (for audit verify/tail/export).
func OpenOperator(stateDir string, readOnly bool) (*Operator, error) {
	loc := storeLocation("", stateDir)
	var (
		db  *store.DB
		err error
	)
	if readOnly {
		db, err = openStoreReadOnly(loc)
	} else {
		db, err = openStore(loc, &store.Options{Instance: witness.NewInstance("cli")})
	}
	if err != nil {
		// The error names the file, or the DSN without its password.
		return nil, fmt.Errorf("opening audit store: %w", err)
	}
	return &Operator{db: db, dir: stateDir, now: time.Now, transport: "cli"}, nil
}

// Operator is an operator's handle on the runner's own store and state
// directory, for operator orders that arrive through the server (the web
// console): the same methods the CLI's commands call, so an approval, a
// phase change or the kill switch means one thing whichever way it comes.
// transport names the way in the records it writes. Close does not close
// the runner's store.
func (r *Runner) Operator(transport string) *Operator {
	// up: the runner's own upstream access (its sandbox, egress resolver
	// and log), so a console refresh lists a stdio upstream exactly as
	// the runner's calls do.
	return &Operator{db: r.db, dir: r.anchor.dir, now: r.now, transport: transport, shared: true, up: r.upstreams, trampoline: r.trampoline}
}

// Close releases the store (not a runner's: see Runner.Operator).
func (o *Operator) Close() error {
	if o.shared {
		return nil
	}
	return o.db.Close()
}

// Verify checks the whole hash chain and then the chain against the
// witness file in the state directory.
func (o *Operator) Verify(ctx context.Context) (AuditVerification, error) {
	return o.VerifyAgainst(ctx, filepath.Join(o.dir, WitnessFile))
}

// VerifyAgainst is Verify with another witness file, e.g. a mirror.
func (o *Operator) VerifyAgainst(ctx context.Context, witnessFile string) (AuditVerification, error) {
	res, err := o.db.Verify(ctx)
	if err != nil {
		return AuditVerification{}, err
	}
	return o.finishVerify(ctx, res, 0, witnessFile)
}

// finishVerify checks the witness after a chain check, and on success
// leaves the verification marker an incremental check starts from.
func (o *Operator) finishVerify(ctx context.Context, res store.VerifyResult, from int64, witnessFile string) (AuditVerification, error) {
	v := AuditVerification{Records: res.Records, OK: res.OK, FirstBad: res.FirstBad, Problem: res.Problem, From: from}
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

func (o *Operator) checkWitness(ctx context.Context, v AuditVerification, witnessFile string) (AuditVerification, error) {
	cps, err := o.readWitness(witnessFile)
	v.Checkpoints = len(cps)
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
	case errors.As(err, &le), errors.Is(err, witness.ErrBadKey):
		v.OK, v.Problem = false, "witness: "+err.Error()
	case err != nil:
		return v, err
	}
	return v, nil
}

// readWitness reads the checkpoints of witnessFile. Checkpoints without
// their key cannot be vouched for, and are reported as such.
func (o *Operator) readWitness(witnessFile string) ([]witness.Checkpoint, error) {
	key, err := witness.LoadKey(witnessKeyPath(o.dir))
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Stat(witnessFile); errors.Is(serr, fs.ErrNotExist) {
			return nil, nil // never anchored; Check decides if it had to be
		}
		return nil, fmt.Errorf("the witness key is missing (%s): %w", filepath.Base(witnessKeyPath(o.dir)), witness.ErrBadKey)
	}
	if err != nil {
		return nil, err
	}
	return witness.ReadFile(witnessFile, key)
}

// Tail returns the last n records, oldest first.
func (o *Operator) Tail(ctx context.Context, n int) ([]AuditRecord, error) { return o.db.Tail(ctx, n) }

// Scan calls fn for each record after seq afterSeq, in order.
func (o *Operator) Scan(ctx context.Context, afterSeq int64, fn func(*AuditRecord) error) error {
	return o.db.Scan(ctx, afterSeq, fn)
}

// SetKillSwitch engages or releases the kill switch on every server using
// this state directory, records it in the audit trail and checkpoints it
// in the witness.
//
// Engaging writes the kill switch file first, so the switch is on even if
// the record then cannot be written (the error says so; any runner on the
// state directory records it later). Releasing records first and changes
// the file only once the record is committed: a release that cannot be
// audited does not happen (fail closed).
func (o *Operator) SetKillSwitch(ctx context.Context, engaged bool, by, reason string) error {
	var st killswitch.State
	if engaged {
		var err error
		if st, err = TripKillSwitch(o.dir, by, reason); err != nil {
			return err
		}
	} else {
		st = killswitch.State{By: by, Reason: reason, At: o.now().UTC(), ID: killswitch.NewID()}
	}
	if _, err := recordKillChange(ctx, o.db, st); err != nil {
		return fmt.Errorf("auditing kill switch change: %w", err)
	}
	if !engaged {
		if err := killswitch.Write(o.dir, st); err != nil {
			return fmt.Errorf("releasing the kill switch: %w", err)
		}
	}
	if err := checkpointWith(ctx, o.dir, o.db); err != nil {
		return fmt.Errorf("checkpointing the kill switch change: %w", err)
	}
	return nil
}

// KillSwitch reports whether the kill switch is engaged: by its file or
// by the store; an unreadable state is engaged, with the error.
func (o *Operator) KillSwitch(ctx context.Context) (bool, error) {
	st, err := killswitch.Read(o.dir)
	if err != nil {
		return true, err
	}
	on, err := o.db.KillSwitch(ctx)
	return on || st.Engaged, err
}

// AttributionKeyName is the store key that signs attributions.
const AttributionKeyName = "attribution"

// AttributionSigner returns the signer for this state directory's
// attribution key (created on first use by a writable handle).
func (o *Operator) AttributionSigner(ctx context.Context) (*attribution.Signer, error) {
	key, err := o.db.Key(ctx, AttributionKeyName)
	if err != nil {
		return nil, fmt.Errorf("loading the attribution key: %w", err)
	}
	return attribution.NewSigner(key)
}

// RecordAction audits an operator action that changes nothing the other
// methods record themselves — a console login or logout — with who (by)
// and why (reason); failure, when not nil, is recorded as the outcome.
func (o *Operator) RecordAction(ctx context.Context, capability, by, reason string, failure error) error {
	rec := &store.Record{Time: o.now().UTC(), Principal: "operator:" + by, Transport: o.transport, Capability: capability,
		Decision: "allow", Outcome: "ok", Reason: reason}
	if failure != nil {
		rec.Decision, rec.Outcome, rec.Error = "deny", "error", failure.Error()
	}
	if err := o.db.Append(ctx, rec); err != nil {
		return fmt.Errorf("auditing %s: %w", capability, err)
	}
	return nil
}
