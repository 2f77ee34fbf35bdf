package operator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/airlock-dev/airlock/attribution"
	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/audit/witness"
	"github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/execution/upstream"
	"github.com/airlock-dev/airlock/internal/policy/killswitch"
	"github.com/airlock-dev/airlock/store"
)

// API is the operator's handle on a state directory. Every change it makes
// is itself audited. Its methods may be called concurrently (the console
// does), except VerifySegments, which swaps the chain the witness is
// checked against for its duration (only the CLI calls it).
type API struct {
	db  *store.DB
	dir string
	now func() time.Time
	// transport is what the records of its changes name as the way the
	// order came in: "cli", or "console" for the web console.
	transport string
	// shared: db belongs to a running engine (Attach); Close leaves it
	// open.
	shared bool
	up     *upstream.Connector // created on first use, or the engine's

	trampoline string // sandbox trampoline for stdio upstreams; "" = this executable
	// chain, when set, is what the witness is checked against instead of
	// db (the store with its rotated segments, rotate.go).
	chain witness.Chain
	// openedAt is the chain's head seq when a writable handle was opened
	// (-1 for a read-only one): Close anchors what was appended since.
	openedAt int64
}

// Open opens the store in stateDir for a command run beside (or without) a
// live server; readOnly opens it without the ability to write (for audit
// verify/tail/export).
func Open(stateDir string, readOnly bool) (*API, error) {
	loc := state.StoreLocation("", stateDir)
	var (
		db  *store.DB
		err error
	)
	if readOnly {
		db, err = state.OpenStoreReadOnly(loc)
	} else {
		db, err = state.OpenStore(loc, &store.Options{Instance: witness.NewInstance("cli")})
	}
	if err != nil {
		// The error names the file, or the DSN without its password.
		return nil, fmt.Errorf("opening audit store: %w", err)
	}
	o := &API{db: db, dir: stateDir, now: time.Now, transport: "cli", openedAt: -1}
	if !readOnly {
		if o.openedAt, _, err = db.Head(context.Background()); err != nil {
			db.Close()
			return nil, fmt.Errorf("reading the audit chain's head: %w", err)
		}
	}
	return o, nil
}

// stateFiles are what a server leaves in its state directory (the store
// and the witness at start; the kill switch file when engaged): one of
// them is enough to know a server runs there, even if the database was
// removed under it.
var stateFiles = []string{state.DBFile, state.WitnessFile, killswitch.FileName}

// InUse reports whether a server has used stateDir, so that an operator
// command does not act on a directory no server reads: the store is in
// PostgreSQL ($AIRLOCK_STORE: the database is what every instance reads —
// the kill switch row, contexts, declarations — whatever this directory
// holds), or the directory holds one of the files a server leaves there.
func InUse(stateDir string) bool {
	if os.Getenv(state.StoreEnv) != "" {
		return true
	}
	for _, name := range stateFiles {
		if _, err := os.Stat(filepath.Join(stateDir, name)); err == nil {
			return true
		}
	}
	return false
}

// Attach is an operator's handle on a running engine's own store and state
// directory (what runner.Runner.Lend lends), for operator orders that arrive through
// the server (the web console): the same methods the CLI's commands call.
// transport names the way in the records it writes. Close does not close
// the engine's store.
func Attach(l *state.Lent, transport string) *API {
	// up: the engine's own upstream access (its sandbox, egress resolver
	// and log), so a console refresh lists a stdio upstream exactly as
	// the runner's calls do.
	db, dir, now, up := state.Borrow(l)
	return &API{db: db, dir: dir, now: now, transport: transport, shared: true, up: up}
}

// Close anchors in the witness the records this handle's commands
// appended, then releases the store (not an engine's: see Attach).
func (o *API) Close() error {
	if o.shared {
		return nil
	}
	return errors.Join(o.anchorAppended(), o.db.Close())
}

// anchorAppended writes a witness checkpoint when a writable handle's
// commands appended records. Without it, an operator command run before
// the first serve (upstreams review and approve may be) left a chain with
// records and no checkpoint, and that serve logged a WARN that the chain
// "had no witness checkpoint" — the words a cut or deleted witness would
// earn (issue 24 item 6, TestFirstServeAfterApprovalIsQuiet). The witness
// file's lock orders this append with a running server's.
func (o *API) anchorAppended() error {
	if o.openedAt < 0 {
		return nil
	}
	seq, _, err := o.db.Head(context.Background())
	if err != nil || seq == o.openedAt {
		return err
	}
	if err := checkpointWith(context.Background(), o.dir, o.db); err != nil {
		return fmt.Errorf("anchoring the operator's records in the witness: %w", err)
	}
	return nil
}

// Tail returns the last n records, oldest first.
func (o *API) Tail(ctx context.Context, n int) ([]audit.Record, error) { return o.db.Tail(ctx, n) }

// Scan calls fn for each record after seq afterSeq, in order.
func (o *API) Scan(ctx context.Context, afterSeq int64, fn func(*audit.Record) error) error {
	return o.db.Scan(ctx, afterSeq, fn)
}

// AttributionSigner returns the signer for this state directory's
// attribution key (created on first use by a writable handle).
func (o *API) AttributionSigner(ctx context.Context) (*attribution.Signer, error) {
	key, err := o.db.Key(ctx, state.AttributionKey)
	if err != nil {
		return nil, fmt.Errorf("loading the attribution key: %w", err)
	}
	return attribution.NewSigner(key)
}

// operator is who gives this handle's orders: by, over its transport.
func (o *API) operator(by string) audit.Operator {
	return audit.Operator{Name: by, Transport: o.transport}
}

// RecordLogin audits by signing in to the console (reason: why;
// failure, when not nil, is recorded as the outcome). It changes nothing
// the other methods record themselves.
func (o *API) RecordLogin(ctx context.Context, by, reason string, failure error) error {
	return o.appendAction(ctx, audit.ConsoleLogin(o.now().UTC(), o.operator(by), reason, failure))
}

// RecordLogout audits by signing out of the console, as RecordLogin.
func (o *API) RecordLogout(ctx context.Context, by, reason string, failure error) error {
	return o.appendAction(ctx, audit.ConsoleLogout(o.now().UTC(), o.operator(by), reason, failure))
}

func (o *API) appendAction(ctx context.Context, rec *audit.Record) error {
	if err := o.db.Append(ctx, rec); err != nil {
		return fmt.Errorf("auditing %s: %w", rec.Capability, err)
	}
	return nil
}
