package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/attribution"
	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/audit/witness"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/edge/tracing"
	"github.com/airlock-dev/airlock/internal/execution/approvallatency"
	"github.com/airlock-dev/airlock/internal/execution/catalog"
	"github.com/airlock-dev/airlock/internal/execution/comm"
	"github.com/airlock-dev/airlock/internal/execution/credentials"
	"github.com/airlock-dev/airlock/internal/execution/derived"
	"github.com/airlock-dev/airlock/internal/execution/hooks"
	"github.com/airlock-dev/airlock/internal/execution/pipelinehost"
	"github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/execution/upstream"
	"github.com/airlock-dev/airlock/internal/kit/calllog"
	"github.com/airlock-dev/airlock/internal/kit/metrics"
	"github.com/airlock-dev/airlock/internal/policy/challenge"
	"github.com/airlock-dev/airlock/internal/policy/redact"
	"github.com/airlock-dev/airlock/internal/provenance"
	"github.com/airlock-dev/airlock/sources"
	"github.com/airlock-dev/airlock/store"
	"github.com/airlock-dev/airlock/tools"
)

// Options configure a Runner; nil means defaults.
type Options struct {
	Logger *slog.Logger
	Now    func() time.Time

	// Metrics receives the runner's, the store's and the sandbox's series
	// (issue 12 item 2); nil records none.
	Metrics *metrics.Metrics

	// Tracer exports a span per call (issue 12 item 3); nil traces none.
	Tracer *tracing.Tracer

	// SandboxTrampoline is the cgo-free binary the sandbox re-executes
	// (default: this executable, which calls sandbox.MaybeRunTrampoline).
	SandboxTrampoline string

	// EgressResolver resolves the host names a stdio upstream's egress
	// proxy connects to (default: the system's); tests map names to
	// loopback with it.
	EgressResolver comm.Resolver

	storeOpts *store.Options // tests: a store that really cannot write
}

// Runner executes tool calls for sessions. It is safe for concurrent use.
type Runner struct {
	gen      atomic.Pointer[generation] // config + policies; swapped by Reload
	log      *slog.Logger
	metrics  *metrics.Metrics // nil-safe
	tracer   *tracing.Tracer  // nil: tracing off
	now      func() time.Time
	db       *store.DB
	pools    *sources.Registry
	derived  *derived.Pools // pools calls made (pipeline outputs)
	redactor *redact.Redactor
	tools    map[string]toolkit.Tool
	order    []string

	// Per-process caches of derived objects; the state they derive from
	// (contexts, usage) is in the store.
	bindings sync.Map // context id → *binding
	trackers state.Trackers
	analyses provenance.Memo // the matcher's analyses of texts traced needs saw

	handleKey  []byte           // signs context handles
	challenges *challenge.Keyed // signs approval questions

	pipelines toolkit.PipelineHost
	upstreams *upstream.Connector
	decls     *declarations.Manager
	signer    *attribution.Signer
	broker    *brokerConfig
	notifier  *hooks.Live
	approvals *approvallatency.Watch // approval latency of decisions made elsewhere
	creds     *credentials.Set       // scoped credentials, read at each use
	stop      chan struct{}

	anchor *state.Anchor // kill switch file and witness checkpoints

	closeOnce sync.Once
	closeErr  error
}

// The store keeps the derived pools.
var _ derived.Store = (*store.DB)(nil)

// Errors returned by New and OpenSession.
var (
	ErrUnknownRole = errors.New("unknown role")
)

// New opens the store under stateDir, the pools and the policies of cfg.
func New(cfg *config.Config, stateDir string, opts *Options) (*Runner, error) {
	if opts == nil {
		opts = &Options{}
	}
	r := &Runner{log: opts.Logger, now: opts.Now, metrics: opts.Metrics, tracer: opts.Tracer,
		tools: map[string]toolkit.Tool{}}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	// Lines logged with a call's context carry its id (calllog).
	r.log = slog.New(calllog.Handler(r.log.Handler()))
	if r.now == nil {
		r.now = time.Now
	}
	policies, err := cfg.PolicySet()
	if err != nil {
		return nil, err
	}
	r.gen.Store(&generation{cfg: cfg, policies: policies, catalogs: &catalog.Cache{}})
	// 0700: only the server enters it; the sandbox binds what a run reads
	// as root (pipelinehost). The store is 0600.
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating state dir: %w", err)
	}
	// One instance id names this process in its witness checkpoints and
	// in every audit record it appends, so a chain several instances share
	// (PostgreSQL) says which one wrote what.
	instance := witness.NewInstance("serve")
	if r.anchor, err = state.OpenAnchor(stateDir, instance, cfg.Audit.WitnessMirrors, r.log); err != nil {
		return nil, fmt.Errorf("opening the audit witness: %w", err)
	}
	var sopts store.Options
	if opts.storeOpts != nil {
		sopts = *opts.storeOpts
	}
	sopts.OnCommit = r.anchor.Notify
	sopts.OnBatch = r.metrics.AuditCommit
	sopts.Instance = instance
	if r.db, err = state.OpenStore(state.StoreLocation(cfg.Store, stateDir), &sopts); err != nil {
		r.anchor.Close()
		return nil, fmt.Errorf("opening store: %w", err)
	}
	// The store is checked against its witness, and a kill switch tripped
	// while no runner could write the store is audited now (and by the
	// per-call check when it changes).
	if err := r.anchor.Start(context.Background(), r.db, cfg.Audit.CheckpointEveryRecords, cfg.Audit.CheckpointInterval()); err != nil {
		r.anchor.Close()
		r.db.Close()
		return nil, err
	}
	key, err := r.db.Key(context.Background(), "redaction")
	if err != nil {
		r.closeStore()
		return nil, fmt.Errorf("loading redaction key: %w", err)
	}
	r.redactor = redact.New(key)
	if err := r.initDeclarations(cfg); err != nil {
		r.closeStore()
		return nil, err
	}
	srcOpts := &sources.Options{MaxReadBytes: cfg.Server.MaxReadBytes, MaxFileBytes: cfg.Server.MaxFileBytes, Now: r.now}
	if r.pools, err = sources.OpenRegistry(cfg.Pools, srcOpts); err != nil {
		r.closeStore()
		return nil, fmt.Errorf("opening pools: %w", err)
	}
	r.derived = derived.New(r.db, r.pools, r.log, r.now, func() derived.Retention {
		srv := r.Config().Server
		return derived.Retention{Count: srv.MaxOutputPools, MaxAge: time.Duration(srv.OutputPoolTTLSeconds) * time.Second}
	})
	r.pipelines = pipelinehost.New(cfg, stateDir, &pipelinehost.Options{SandboxTrampoline: opts.SandboxTrampoline, Metrics: opts.Metrics}, r.log)
	pipelinehost.Recover(context.Background(), stateDir, r.db, r.now, r.log) // runs an earlier process left unfinished
	r.upstreams = upstream.New(r.db, &upstream.Options{Logger: r.log, Now: r.now, SandboxTrampoline: opts.SandboxTrampoline, EgressResolver: opts.EgressResolver, Metrics: opts.Metrics})
	for _, t := range tools.All() {
		r.tools[t.Name] = t
		r.order = append(r.order, t.Name)
	}
	gen, err := r.newGeneration(cfg)
	if err != nil {
		r.Close()
		return nil, err
	}
	r.gen.Store(gen)
	state.RegisterGauges(r.metrics, r.db)
	r.notifier = hooks.NewLive(cfg, &hooks.Options{Logger: r.log, SandboxTrampoline: opts.SandboxTrampoline, OnOutcome: r.metrics.Notification})
	r.creds = r.newCredentials()
	r.creds.Check() // a credential already unusable at start is audited now
	return r, nil
}

// Close stops the background loops and closes the pools and the store.
// Sessions stay open in the store: they are the clients', not the
// process's, and another process (or this one restarted) serves them.
// Calling it again returns the first result.
func (r *Runner) Close() error {
	r.closeOnce.Do(func() {
		close(r.stop)
		r.broker.close()
		r.upstreams.Close()
		r.pipelines.Sandbox.Close()
		r.notifier.Close()
		r.closeErr = errors.Join(r.pools.Close(), r.closeStore())
	})
	return r.closeErr
}

// closeStore writes the final witness checkpoint and closes the witness
// and the store, in that order (the checkpoint reads the store).
func (r *Runner) closeStore() error {
	return errors.Join(r.anchor.Close(), r.db.Close())
}

// Config returns the configuration in force.
func (r *Runner) Config() *config.Config { return r.gen.Load().cfg }

// Lend lends the runner's store, state directory, clock and upstream
// connector to the operator's API (operator.Attach), for the orders that
// arrive through the server (the web console). What it lends can be read
// only by a package that imports package state (see state.Lent).
func (r *Runner) Lend() *state.Lent {
	return state.Lend(r.db, r.anchor.Dir(), r.now, r.upstreams)
}
