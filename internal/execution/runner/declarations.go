package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/attribution"
	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/approvallatency"
	"github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/policy/challenge"
	"github.com/airlock-dev/airlock/store"
)

// sweepInterval is how often expired declarations and approvals are swept.
const sweepInterval = 30 * time.Second

func (r *Runner) initDeclarations(cfg *config.Config) error {
	ctx := context.Background()
	key, err := r.db.Key(ctx, state.AttributionKey)
	if err != nil {
		return fmt.Errorf("loading the attribution key: %w", err)
	}
	if r.signer, err = attribution.NewSigner(key); err != nil {
		return err
	}
	if r.broker, err = newBrokerConfig(cfg); err != nil {
		return err
	}
	if r.handleKey, err = r.db.Key(ctx, state.ContextHandleKey); err != nil {
		return fmt.Errorf("loading the context handle key: %w", err)
	}
	ckey, err := r.db.Key(ctx, state.ChallengeKey)
	if err != nil {
		return fmt.Errorf("loading the approval challenge key: %w", err)
	}
	if r.challenges, err = challenge.New(ckey); err != nil {
		return err
	}
	r.approvals = approvallatency.New(r.metrics, r.db.Declarations(), r.now, r.log)
	r.decls = newManager(r.db, cfg, r.now, r.approvals.Observer())
	r.stop = make(chan struct{})
	go r.every(sweepInterval, r.Sweep)
	return nil
}

// The approval latency sweep reads the store's declarations.
var _ approvallatency.Store = (*store.DeclarationStore)(nil)

// newManager is the declarations' lifecycle under cfg; onDecided (may
// be nil) times every need that waited for a person (approval latency).
func newManager(db *store.DB, cfg *config.Config, now func() time.Time, onDecided func(*declarations.Declaration, declarations.State, time.Duration)) *declarations.Manager {
	return declarations.NewManager(db.Declarations(), &declarations.ManagerOptions{
		ApprovalTTL:    time.Duration(cfg.Comm.ApprovalTTLSeconds) * time.Second,
		DeclarationTTL: time.Duration(cfg.Comm.DeclarationTTLSeconds) * time.Second,
		Now:            now,
		OnDecided:      onDecided,
	})
}

// Sweep is the periodic housekeeping (every 30 s while serving; tests
// call it directly): expire declarations and approvals past their
// deadlines, close idle sessions, notice credentials revoked while
// unused, and time the approvals decided by other processes.
func (r *Runner) Sweep(ctx context.Context) {
	r.ExpireDeclarations(ctx)
	r.closeIdleSessions(ctx)
	r.creds.Check() // a secret file removed while unused: audit its revocation
	r.approvals.Sweep(ctx)
}

// every runs f each interval until the runner closes: the expiry sweep of
// declarations, approvals and idle sessions.
func (r *Runner) every(interval time.Duration, f func(context.Context)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			f(context.Background())
		}
	}
}
