package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/airlock-dev/airlock/attribution"
	"github.com/airlock-dev/airlock/store"
)

// AuditRecord is one record of the audit trail.
type AuditRecord = store.Record

// AuditVerification is the result of checking the hash chain.
type AuditVerification = store.VerifyResult

// Operator is the operator's handle on a state directory, for commands run
// beside (or without) a live server: reading and verifying the audit trail
// and tripping the kill switch. Every change it makes is itself audited.
type Operator struct {
	db  *store.DB
	now func() time.Time
}

// OpenOperator opens the store in stateDir; readOnly opens it without the
// ability to write (for audit verify/tail/export).
func OpenOperator(stateDir string, readOnly bool) (*Operator, error) {
	path := filepath.Join(stateDir, DBFile)
	var (
		db  *store.DB
		err error
	)
	if readOnly {
		db, err = store.OpenReadOnly(path)
	} else {
		db, err = store.Open(path, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("opening audit store %s: %w", path, err)
	}
	return &Operator{db: db, now: time.Now}, nil
}

// Close releases the store.
func (o *Operator) Close() error { return o.db.Close() }

// Verify checks the whole hash chain.
func (o *Operator) Verify(ctx context.Context) (AuditVerification, error) { return o.db.Verify(ctx) }

// Tail returns the last n records, oldest first.
func (o *Operator) Tail(ctx context.Context, n int) ([]AuditRecord, error) { return o.db.Tail(ctx, n) }

// Scan calls fn for each record after seq afterSeq, in order.
func (o *Operator) Scan(ctx context.Context, afterSeq int64, fn func(*AuditRecord) error) error {
	return o.db.Scan(ctx, afterSeq, fn)
}

// SetKillSwitch engages or releases the kill switch on every server using
// this state directory, and records it.
func (o *Operator) SetKillSwitch(ctx context.Context, engaged bool, by, reason string) error {
	return setKillSwitch(ctx, o.db, o.now(), engaged, by, reason)
}

// KillSwitch reports whether the kill switch is engaged.
func (o *Operator) KillSwitch(ctx context.Context) (bool, error) { return o.db.KillSwitch(ctx) }

func setKillSwitch(ctx context.Context, db *store.DB, now time.Time, engaged bool, by, reason string) error {
	if err := db.SetKillSwitch(ctx, engaged, by, reason); err != nil {
		return fmt.Errorf("setting kill switch: %w", err)
	}
	rec := &store.Record{
		Time: now.UTC(), Principal: "operator:" + by, Transport: "cli", Capability: "operator.kill_switch",
		Decision: "allow", Outcome: "ok", Reason: reason, Extra: mustJSON(map[string]bool{"engaged": engaged}),
	}
	if err := db.Append(ctx, rec); err != nil {
		return fmt.Errorf("auditing kill switch change: %w", err)
	}
	return nil
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
