// Package upstream is how Airlock reaches upstream MCP servers (issue 15),
// shared by the runner (a comm.mcp call) and the operator's API (`airlock
// upstreams review`, the console's refresh): connecting (HTTP through
// comm's checked dialer, stdio inside the sandbox, with its egress proxy:
// egress.go), observing the tool list against the pins in the store, and
// checking a need against its pin.
//
// The invariant it keeps: a tool definition reaches the agent (the
// catalog, [Connector.Approved]) or is called only when the pin in the
// store is approved and the upstream lists exactly the approved definition
// (pinning.Pin.Usable), and a need reaches it only with argument keys the
// pinned input schema names, spelt exactly (arguments.go), from a caller
// whose policy could allow the tool at all (Check). Every pin change it
// observes is audited. Only the runner and the operator's API may import
// it (and package state, which carries the runner's connector to the
// operator's API: state.Lent; TestOnlyRunnerReachesToolsAndStore): the
// operator reviews (lists), only the runner's broker calls.
package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/catalog"
	"github.com/airlock-dev/airlock/internal/execution/comm"
	"github.com/airlock-dev/airlock/internal/execution/sandbox"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/execution/upstream/warm"
	"github.com/airlock-dev/airlock/internal/kit/argschema"
	"github.com/airlock-dev/airlock/internal/kit/metrics"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/pinning"
	"github.com/airlock-dev/airlock/internal/policy/policy"
	"github.com/airlock-dev/airlock/store"
)

// Connector reaches the configured upstreams for one process. It is safe
// for concurrent use.
type Connector struct {
	db         *store.DB
	log        *slog.Logger
	now        func() time.Time
	trampoline string
	resolver   comm.Resolver // egress names; nil: the system's (egress.go)

	sbOnce sync.Once
	sb     *sandbox.Sandbox
	sbErr  error

	schemas sync.Map // approved digest → *checker

	pool  *warm.Pool // warm sessions (warmcall.go)
	stats *stats     // per upstream, for status and metrics (status.go)
}

// Options configure a Connector; nil means defaults.
type Options struct {
	Logger *slog.Logger
	Now    func() time.Time
	// SandboxTrampoline is the binary the sandbox re-executes for stdio
	// upstreams (default: this executable).
	SandboxTrampoline string
	// EgressResolver resolves the host names a stdio upstream's egress
	// proxy connects to (default: the system's); tests map names to
	// loopback with it.
	EgressResolver comm.Resolver
	// Metrics receives the upstreams' series (status.go); nil records none.
	Metrics *metrics.Metrics
}

// New returns a connector whose pins, and the audit records of their
// changes, are in db.
func New(db *store.DB, opts *Options) *Connector {
	if opts == nil {
		opts = &Options{}
	}
	u := &Connector{db: db, log: opts.Logger, now: opts.Now, trampoline: opts.SandboxTrampoline, resolver: opts.EgressResolver}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	if u.now == nil {
		u.now = time.Now
	}
	u.initWarm(opts)
	return u
}

// sandbox returns the sandbox stdio upstreams run in, created on first
// use; without one a stdio upstream is UPSTREAM_UNAVAILABLE (fail closed:
// never run outside it).
func (u *Connector) sandbox() (*sandbox.Sandbox, error) {
	u.sbOnce.Do(func() {
		u.sb, u.sbErr = sandbox.New(&sandbox.Options{TrampolinePath: u.trampoline, Logger: u.log})
	})
	return u.sb, u.sbErr
}

// stdioGrace is how much longer than the upstream's timeout its sandbox
// may live (start-up, shutdown).
const stdioGrace = 5 * time.Second

// Session is one open connection to an upstream.
type Session struct {
	*comm.MCPSession
	closeProc func()
	extra     *Extra // brokered credentials (brokered.go); nil: none
	// done is closed when a stdio upstream's process has ended and exit
	// says how (nil for an HTTP upstream): warm.Conn's Done and Exit.
	done <-chan struct{}
	exit func() *warm.Exit
}

// Close ends the session and, for a stdio upstream, its process.
func (s *Session) Close() {
	s.MCPSession.Close()
	if s.closeProc != nil {
		s.closeProc()
	}
}

// Dial connects to up. ctx bounds the whole session (the caller's timeout).
// Credentials come from the upstream's own config (env / headers); the
// agent's token is never among them: nothing of the calling session is
// passed (TestUpstreamNeverGetsAgentToken).
//
// rules, when set, judges every address an HTTP upstream's connection
// reaches (the calling policy's network section, as for comm.fetch); the
// operator's review (`airlock upstreams review`) has no caller and passes nil.
//
// extra, when set, is what this call's connection carries on the caller's
// behalf (brokered.go): scrubbed from everything the session reads back.
func (u *Connector) Dial(ctx context.Context, cfg *config.Config, up config.Upstream, rules comm.IPRules, extra *Extra) (*Session, error) {
	return u.dial(ctx, cfg, up, rules, extra, dialOpts{})
}

// dial is Dial, for one call (o zero) or for a warm session (warmcall.go).
func (u *Connector) dial(ctx context.Context, cfg *config.Config, up config.Upstream, rules comm.IPRules, extra *Extra, o dialOpts) (*Session, error) {
	maxBytes := up.MaxResultBytes*2 + 1<<20 // the listing and the answer, JSON-encoded
	if !up.Stdio() {
		private, err := cfg.Comm.Fetch.PrivatePrefixes()
		if err != nil {
			return nil, err
		}
		headers := map[string]string{}
		for name, src := range up.Headers {
			v, err := src.ReadRequired()
			if err != nil {
				return nil, violation.Wrap(violation.UpstreamUnavailable, err, "upstream %q: a configured header cannot be read", up.ID)
			}
			headers[name] = v
		}
		extra.addHeaders(headers)
		conn := comm.MCPConn{URL: up.URL, Headers: headers, AllowPrivate: private, MaxBytes: maxBytes, OnNotify: o.notify}
		if rules != nil {
			conn.Rules = rules
		}
		s, err := comm.DialMCP(ctx, conn)
		if err != nil {
			return nil, extra.ScrubError(comm.MCPViolation(up.ID, err))
		}
		return &Session{MCPSession: s, extra: extra}, nil
	}
	sb, err := u.sandbox()
	if err != nil {
		return nil, violation.Wrap(violation.UpstreamUnavailable, err, "upstream %q runs in the sandbox, which is unavailable on this host", up.ID)
	}
	env, _, err := config.ReadEnv(up.Env)
	if err != nil {
		return nil, violation.Wrap(violation.UpstreamUnavailable, err, "upstream %q: a configured environment variable cannot be read", up.ID)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	tail, errW, err := newStderrTail()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	loop, egressEnv, err := u.egressFor(ctx, cfg, up)
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		errW.Close()
		tail.r.Close()
		return nil, violation.Wrap(violation.UpstreamUnavailable, err, "upstream %q: its egress cannot be set up", up.ID)
	}
	// HOME and TMPDIR in its scratch directory, then its configured
	// variables and its egress.
	env = append(append(append([]string{"HOME=" + sandbox.TempDir, "TMPDIR=" + sandbox.TempDir}, env...), extra.env()...), egressEnv...)
	mem := up.MemoryBytes
	spec := sandbox.Spec{
		Argv: up.Command, Env: env, ReadOnly: up.ReadOnly, Temp: true, Dir: sandbox.TempDir,
		StdinFile: inR, StdoutFile: outW, StderrFile: errW, Loopback: loop,
		Limits: sandbox.Limits{Wall: o.wall(up), MemoryBytes: mem, Procs: 64, OutputBytes: 64 << 10},
	}
	tail.drain(env)
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	var runErr error
	var res *sandbox.Result
	go func() {
		defer close(done)
		res, runErr = sb.Run(runCtx, spec)
		// The process is gone: our copies of its ends go too, so the
		// client reads EOF instead of waiting.
		inR.Close()
		outW.Close()
		errW.Close()
		tail.wait()
	}()
	// Killed first, then its stdin closed: an end this side ordered is
	// always the sandbox's "canceled", never the upstream's own exit (which
	// exit reports as a crash).
	closeProc := func() {
		stop()
		inW.Close()
		<-done
		outR.Close()
		if runErr != nil && !errors.Is(runErr, context.Canceled) {
			u.log.Warn("upstream sandbox", "upstream", up.ID, "err", runErr)
		}
	}
	exit := func() *warm.Exit { <-done; return exitOf(res, runErr, tail) }
	s, err := comm.DialMCP(ctx, comm.MCPConn{In: outR, Out: inW, MaxBytes: maxBytes, OnNotify: o.notify})
	if err != nil {
		closeProc()
		if runErr != nil && !errors.Is(runErr, context.Canceled) {
			err = errors.Join(err, runErr)
		}
		return nil, extra.ScrubError(comm.MCPViolation(up.ID, err))
	}
	return &Session{MCPSession: s, closeProc: closeProc, extra: extra, done: done, exit: exit}, nil
}

// Observe lists up's tools and brings the pins up to date in one store
// transaction: a new tool is pending, an approved one listed differently
// is changed (blocked), one no longer listed is removed. Each change is
// audited, by whom (the principal whose call or review saw it). A tool
// whose name cannot be a comm.mcp tool, or whose definition cannot be
// pinned (ambiguous schema), is never pinned and so never usable.
func (u *Connector) Observe(ctx context.Context, s *Session, up config.Upstream, by string) (map[string]*pinning.Pin, error) {
	defs, err := s.ListTools(ctx)
	if err != nil {
		return nil, comm.MCPViolation(up.ID, err)
	}
	var changes []*pinning.Pin
	out := map[string]*pinning.Pin{}
	var skipped []string
	diff := func(cur map[string]*pinning.Pin) ([]*pinning.Pin, error) {
		changes, skipped = nil, nil
		clear(out)
		// A name listed twice is ambiguous (which definition would a call
		// reach?): neither is pinned, and an existing pin of that name is
		// treated as no longer listed, so the tool is blocked.
		count := map[string]int{}
		for _, d := range defs {
			count[d.Name]++
		}
		listed := map[string]bool{}
		for _, d := range defs {
			if !declarations.ValidToolName(d.Name) || count[d.Name] > 1 {
				skipped = append(skipped, d.Name)
				continue
			}
			listed[d.Name] = true
			p, changed, err := pinning.Observe(up.ID, cur[d.Name], pinning.Definition{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema, OutputSchema: d.OutputSchema})
			if err != nil {
				skipped = append(skipped, d.Name)
				continue
			}
			out[d.Name] = p
			if changed {
				changes = append(changes, p)
			}
		}
		for name, p := range cur {
			if listed[name] {
				continue
			}
			gone, changed := pinning.Vanish(p)
			out[name] = gone
			if changed {
				changes = append(changes, gone)
			}
		}
		return changes, nil
	}
	if !u.unchanged(ctx, up.ID, diff) {
		if err := u.db.UpdateUpstreamPins(ctx, up.ID, diff); err != nil {
			return nil, err
		}
	}
	for _, p := range changes {
		u.append(ctx, audit.UpstreamPin(u.now().UTC(), by, auditPin(p)))
	}
	if len(skipped) > 0 {
		u.log.Warn("upstream tools not pinnable (bad name, duplicate or ambiguous schema)", "upstream", up.ID, "count", len(skipped))
	}
	return out, nil
}

// unchanged reports whether diff changes none of upstream's pins as the
// read pool has them — a listing observed before every call of an HTTP
// upstream (pin_check: every_call) almost never does — so that Observe
// settles it without the write transaction, whose lock it would hold
// against the calls' audit commits for a read and a rollback (issue 23).
// The snapshot read is one the write transaction could have started
// from, and from it the transaction would have written nothing; any
// change, or a read that fails, goes through UpdateUpstreamPins, which
// observes again against the pins it locked
// (TestObserveUnchangedNeedsNoWriteLock).
func (u *Connector) unchanged(ctx context.Context, upstream string, diff func(map[string]*pinning.Pin) ([]*pinning.Pin, error)) bool {
	cur, err := u.db.UpstreamPinsByTool(ctx, upstream)
	if err != nil {
		return false
	}
	changes, err := diff(cur)
	return err == nil && len(changes) == 0
}

// AuditApproval records op's approval of the definition of pin p with
// digest (why: the operator's reason), or its failure err.
func (u *Connector) AuditApproval(ctx context.Context, op audit.Operator, p *pinning.Pin, digest, why string, err error) {
	u.append(ctx, audit.UpstreamApprove(u.now().UTC(), op, auditPin(p), digest, why, err))
}

// AuditOverride records op's approval of the definition of pin p with
// digest over the review's flags or with an edited description (o), or
// its failure err.
func (u *Connector) AuditOverride(ctx context.Context, op audit.Operator, p *pinning.Pin, digest string, o audit.Override, err error) {
	u.append(ctx, audit.UpstreamOverride(u.now().UTC(), op, auditPin(p), digest, o, err))
}

// append writes one record about a pin; a failure is logged, not
// returned: the pin's change is made already.
func (u *Connector) append(ctx context.Context, rec *audit.Record) {
	if aerr := u.db.Append(context.WithoutCancel(ctx), rec); aerr != nil {
		u.log.Error("auditing a pin change", "err", aerr)
	}
}

// auditPin is p as its audit records name it; a changed definition is
// blocked (its calls are refused).
func auditPin(p *pinning.Pin) audit.Pin {
	return audit.Pin{Upstream: p.Upstream, Tool: p.Tool, State: string(p.State), SeenDigest: p.SeenDigest,
		ApprovedDigest: p.ApprovedDigest, Flags: len(p.Flags), Blocked: p.State == pinning.Changed}
}

// Check is the pin half of toolkit.UpstreamPins: a comm.mcp need of the
// caller under pol against the approved definition; it returns the
// approved digest. Its questions come in this order, each answered only if
// the one before passed:
//
//  1. could pol allow any call of the tool (catalog.Lists)? If not, the
//     answer is POLICY_DENIED, the same for a tool that exists, one
//     pending review and one nobody has heard of, so a role without the
//     capability learns nothing of the upstream's tools, their state or
//     their schemas (issue 26, item 6; TestUpstreamDeniedRoleLearnsNothing);
//  2. is the upstream configured, the definition approved and unchanged?
//  3. does every argument key name a key of the pinned input schema, spelt
//     exactly (arguments.go; issue 26, item 1)?
//  4. do the arguments satisfy the pinned input schema?
//
// rec, when set, is the audit record of the call: a refusal at 1 is
// recorded in it as the policy step records its own (capability, decision,
// rule, reason).
func (u *Connector) Check(ctx context.Context, cfg *config.Config, pol *policy.Policy, rec *audit.Record, upstream, tool string, args json.RawMessage) (string, error) {
	if err := refuseUnlisted(cfg, pol, rec, upstream, tool); err != nil {
		return "", err
	}
	if _, ok := cfg.Upstream(upstream); !ok {
		return "", violation.New(violation.UpstreamUnavailable, "no upstream %q is configured", upstream)
	}
	p, err := u.db.UpstreamPin(ctx, upstream, tool)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", violation.New(violation.UpstreamNotApproved, "tool %q of upstream %q has no approved definition; an operator reviews it with `airlock upstreams review`", tool, upstream)
	case err != nil:
		return "", err
	case p.State == pinning.Changed:
		return "", violation.New(violation.UpstreamChanged, "tool %q of upstream %q changed since it was approved; it is blocked until an operator reviews the change", tool, upstream)
	case !p.Usable():
		return "", violation.New(violation.UpstreamNotApproved, "tool %q of upstream %q is %s, not approved", tool, upstream, p.State)
	}
	v, err := u.validator(p)
	if err != nil {
		return "", violation.Wrap(violation.UpstreamArguments, err, "the pinned input schema of %q cannot be used to check arguments; the call is refused", tool)
	}
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	if err := v.shape.check(args, pol.AdditionalArguments(policy.MCPPrefix+upstream+"."+tool)); err != nil {
		var ae *ArgumentError
		if errors.As(err, &ae) {
			return "", violation.Wrap(violation.UpstreamArguments, err, "tool %q of upstream %q: %s", tool, upstream, ae.Message())
		}
		return "", violation.Wrap(violation.UpstreamArguments, err, "the arguments cannot be checked against the pinned input schema")
	}
	if err := v.Validate(args); err != nil {
		var ve *violation.Error
		if errors.As(err, &ve) {
			return "", violation.Wrap(violation.UpstreamArguments, ve.Err, "tool %q of upstream %q: %s", tool, upstream, ve.Message)
		}
		return "", violation.Wrap(violation.UpstreamArguments, err, "the arguments do not match the pinned input schema")
	}
	return p.ApprovedDigest, nil
}

// refuseUnlisted is Check's first question: a tool pol could never allow
// is refused with the words and the rule the policy step would give it
// ("mcp.up.echo is denied by policy (rule default)"), decided from the
// policy and the upstream's configured URL only, never from its pins.
func refuseUnlisted(cfg *config.Config, pol *policy.Policy, rec *audit.Record, upstream, tool string) error {
	if catalog.Lists(cfg, pol, upstream, tool) {
		return nil
	}
	c := policy.MCPPrefix + upstream + "." + tool
	in := &policy.Input{Tool: "declare_need", Capability: c, Tier: string(toolkit.TierExternal)}
	if up, ok := cfg.Upstream(upstream); ok && !up.Stdio() {
		in.URL = up.URL
	}
	// Not listable means a deny pattern, no allow or the network section
	// (rows 1-3 of the policy's order): Decide names which, and evaluates
	// no condition on the way.
	d := pol.Decide(in)
	if rec != nil {
		rec.Capability, rec.Decision, rec.RuleID, rec.Reason = c, string(d.Effect), d.RuleID, d.Reason
	}
	return violation.New(violation.PolicyDenied, "%s is denied by policy (rule %s)", c, d.RuleID)
}

// checker is an approved input schema, compiled once per digest: the
// validator and the names it gives the arguments' keys.
type checker struct {
	*argschema.Validator
	shape *argumentShape
}

// validator compiles the approved input schema once per digest. A schema
// may not load anything ($ref to a file or URL): argschema's compiler has
// no loader for them.
func (u *Connector) validator(p *pinning.Pin) (*checker, error) {
	if v, ok := u.schemas.Load(p.ApprovedDigest); ok {
		return v.(*checker), nil
	}
	doc := p.Approved.InputSchema
	if len(doc) == 0 {
		doc = json.RawMessage(`{"type":"object"}`)
	}
	v, err := argschema.Compile("mcp."+p.Upstream+"."+p.Tool, doc)
	if err != nil {
		return nil, err
	}
	shape, err := newArgumentShape(doc)
	if err != nil {
		return nil, err
	}
	c := &checker{Validator: v, shape: shape}
	u.schemas.Store(p.ApprovedDigest, c)
	return c, nil
}

// Approved returns the catalog: the usable pins of configured upstreams.
func (u *Connector) Approved(ctx context.Context, cfg *config.Config) []toolkit.UpstreamTool {
	if len(cfg.Upstreams) == 0 {
		return nil
	}
	pins, err := u.db.UpstreamPins(ctx, "")
	if err != nil {
		u.log.Warn("reading upstream pins for the catalog", "err", err)
		return nil
	}
	var out []toolkit.UpstreamTool
	for _, p := range pins {
		if _, ok := cfg.Upstream(p.Upstream); !ok || !p.Usable() {
			continue
		}
		if _, err := u.validator(p); err != nil {
			continue // cannot be checked, so cannot be called
		}
		// The description shown is the operator's edited one when the
		// decision is for this approved digest (pinning.Pin.Shown).
		out = append(out, toolkit.UpstreamTool{Upstream: p.Upstream, Tool: p.Tool, Description: p.Shown().Description,
			InputSchema: p.Approved.InputSchema, Digest: p.ApprovedDigest})
	}
	return out
}

// Review lists the tools of up and brings its pins up to date, as a call
// would, by an operator (by names them): it connects (a stdio upstream in
// the sandbox), lists and disconnects; it never calls a tool. Its egress,
// if any, admits nothing (no calling policy: egress.go).
func (u *Connector) Review(ctx context.Context, cfg *config.Config, up config.Upstream, by string) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout(up))
	defer cancel()
	s, err := u.Dial(ctx, cfg, up, nil, nil)
	if err != nil {
		return err
	}
	defer s.Close()
	_, err = u.Observe(ctx, s, up, "operator:"+by)
	return err
}

// Timeout is how long one session with up may last (its timeout_ms).
func Timeout(up config.Upstream) time.Duration {
	return time.Duration(up.TimeoutMS) * time.Millisecond
}
