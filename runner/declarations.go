package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/airlock-dev/airlock/attribution"
	"github.com/airlock-dev/airlock/challenge"
	"github.com/airlock-dev/airlock/config"
	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/metrics"
	"github.com/airlock-dev/airlock/store"
)

// sweepInterval is how often expired declarations and approvals are swept.
const sweepInterval = 30 * time.Second

func (r *Runner) initDeclarations(cfg *config.Config) error {
	ctx := context.Background()
	key, err := r.db.Key(ctx, AttributionKeyName)
	if err != nil {
		return fmt.Errorf("loading the attribution key: %w", err)
	}
	if r.signer, err = attribution.NewSigner(key); err != nil {
		return err
	}
	if r.broker, err = newBrokerConfig(cfg); err != nil {
		return err
	}
	if r.handleKey, err = r.db.Key(ctx, ContextHandleKeyName); err != nil {
		return fmt.Errorf("loading the context handle key: %w", err)
	}
	ckey, err := r.db.Key(ctx, ChallengeKeyName)
	if err != nil {
		return fmt.Errorf("loading the approval challenge key: %w", err)
	}
	if r.challenges, err = challenge.New(ckey); err != nil {
		return err
	}
	r.decls = newManager(r.db, cfg, r.now, r.metrics)
	r.stop = make(chan struct{})
	go r.every(sweepInterval, func(ctx context.Context) {
		r.ExpireDeclarations(ctx)
		r.closeIdleSessions(ctx)
		r.creds.Check() // a secret file removed while unused: audit its revocation
	})
	return nil
}

// newManager is the declarations' lifecycle under cfg; m (nil-safe)
// times every need that waited for a person (approval latency, issue 12).
func newManager(db *store.DB, cfg *config.Config, now func() time.Time, m *metrics.Metrics) *declarations.Manager {
	return declarations.NewManager(db.Declarations(), &declarations.ManagerOptions{
		ApprovalTTL:    time.Duration(cfg.Comm.ApprovalTTLSeconds) * time.Second,
		DeclarationTTL: time.Duration(cfg.Comm.DeclarationTTLSeconds) * time.Second,
		Now:            now,
		OnDecided:      approvalObserver(m),
	})
}

// approvalObserver reports a decided need to m; nil when m is.
func approvalObserver(m *metrics.Metrics) func(declarations.State, time.Duration) {
	if m == nil {
		return nil
	}
	return func(to declarations.State, waited time.Duration) { m.ApprovalDecided(string(to), waited) }
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
