package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/comm"
	"github.com/airlock-dev/airlock/internal/execution/sandbox"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/pinning"
	"github.com/airlock-dev/airlock/internal/policy/policy"
	"github.com/airlock-dev/airlock/store"
)

// upstreams is how Airlock reaches upstream MCP servers (issue 15), shared
// by the runner (comm.mcp) and the operator (`airlock upstreams review`):
// connecting (HTTP through comm's checked dialer, stdio inside the
// sandbox), observing the tool list against the pins in the store, and
// checking a need against its pin.
//
// The invariant it keeps: a tool definition reaches the agent (the
// catalog) or is called only when the pin in the store is approved and the
// upstream lists exactly the approved definition (pinning.Pin.Usable).
// Every pin change it observes is audited.
type upstreams struct {
	db         *store.DB
	log        *slog.Logger
	now        func() time.Time
	trampoline string
	resolver   comm.Resolver // egress names; nil: the system's (upstream_egress.go)

	sbOnce sync.Once
	sb     *sandbox.Sandbox
	sbErr  error

	schemas sync.Map // approved digest → *schemaValidator
}

// sandbox returns the sandbox stdio upstreams run in, created on first
// use; without one a stdio upstream is UPSTREAM_UNAVAILABLE (fail closed:
// never run outside it).
func (u *upstreams) sandbox() (*sandbox.Sandbox, error) {
	u.sbOnce.Do(func() {
		u.sb, u.sbErr = sandbox.New(&sandbox.Options{TrampolinePath: u.trampoline, Logger: u.log})
	})
	return u.sb, u.sbErr
}

// stdioGrace is how much longer than the upstream's timeout its sandbox
// may live (start-up, shutdown).
const stdioGrace = 5 * time.Second

// session is one open connection to an upstream.
type upstreamSession struct {
	*comm.MCPSession
	closeProc func()
}

func (s *upstreamSession) Close() {
	s.MCPSession.Close()
	if s.closeProc != nil {
		s.closeProc()
	}
}

// dial connects to u. ctx bounds the whole session (the caller's timeout).
// Credentials come from the upstream's own config (env / headers); the
// agent's token is never among them: nothing of the calling session is
// passed (TestUpstreamNeverGetsAgentToken).
//
// rules, when set, judges every address an HTTP upstream's connection
// reaches (the calling policy's network section, as for comm.fetch); the
// operator's review (`airlock upstreams review`) has no caller and passes nil.
func (u *upstreams) dial(ctx context.Context, cfg *config.Config, up config.Upstream, rules comm.IPRules) (*upstreamSession, error) {
	maxBytes := up.MaxResultBytes*2 + 1<<20 // the listing and the answer, JSON-encoded
	if !up.Stdio() {
		private, err := cfg.Comm.Fetch.PrivatePrefixes()
		if err != nil {
			return nil, err
		}
		headers := map[string]string{}
		for name, src := range up.Headers {
			v, err := readSource(src)
			if err != nil {
				return nil, violation.Wrap(violation.UpstreamUnavailable, err, "upstream %q: a configured header cannot be read", up.ID)
			}
			headers[name] = v
		}
		conn := comm.MCPConn{URL: up.URL, Headers: headers, AllowPrivate: private, MaxBytes: maxBytes}
		if rules != nil {
			conn.Rules = rules
		}
		s, err := comm.DialMCP(ctx, conn)
		if err != nil {
			return nil, comm.MCPViolation(up.ID, err)
		}
		return &upstreamSession{MCPSession: s}, nil
	}
	sb, err := u.sandbox()
	if err != nil {
		return nil, violation.Wrap(violation.UpstreamUnavailable, err, "upstream %q runs in the sandbox, which is unavailable on this host", up.ID)
	}
	env, _, err := sandboxEnv(up.Env)
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
	loop, egressEnv, err := u.egressFor(ctx, cfg, up)
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, violation.Wrap(violation.UpstreamUnavailable, err, "upstream %q: its egress cannot be set up", up.ID)
	}
	env = append(env, egressEnv...)
	mem := up.MemoryBytes
	spec := sandbox.Spec{
		Argv: up.Command, Env: env, ReadOnly: up.ReadOnly, Temp: true, Dir: sandbox.TempDir,
		StdinFile: inR, StdoutFile: outW, Loopback: loop,
		Limits: sandbox.Limits{Wall: time.Duration(up.TimeoutMS)*time.Millisecond + stdioGrace, MemoryBytes: mem, Procs: 64, OutputBytes: 64 << 10},
	}
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
	}()
	closeProc := func() {
		inW.Close()
		stop()
		<-done
		outR.Close()
		if runErr != nil && !errors.Is(runErr, context.Canceled) {
			u.log.Warn("upstream sandbox", "upstream", up.ID, "err", runErr)
		} else if res != nil && len(res.Stderr) > 0 {
			u.log.Debug("upstream stderr", "upstream", up.ID, "bytes", len(res.Stderr))
		}
	}
	s, err := comm.DialMCP(ctx, comm.MCPConn{In: outR, Out: inW, MaxBytes: maxBytes})
	if err != nil {
		closeProc()
		if runErr != nil && !errors.Is(runErr, context.Canceled) {
			err = errors.Join(err, runErr)
		}
		return nil, comm.MCPViolation(up.ID, err)
	}
	return &upstreamSession{MCPSession: s, closeProc: closeProc}, nil
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// sandboxEnv is the environment of a long-lived sandboxed process (a stdio
// upstream, a command hook): HOME and TMPDIR in its scratch directory and
// the configured variables, read now, in name order. On failure it names
// the variable that could not be read (never a value).
func sandboxEnv(vars map[string]config.TokenSource) (env []string, failed string, err error) {
	env = []string{"HOME=" + sandbox.TempDir, "TMPDIR=" + sandbox.TempDir}
	for _, name := range slices.Sorted(mapKeys(vars)) {
		v, err := readSource(vars[name])
		if err != nil {
			return nil, name, err
		}
		env = append(env, name+"="+v)
	}
	return env, "", nil
}

// readSource reads a credential from the environment or a file; an unset
// variable is an error here (an upstream would otherwise run without it).
func readSource(src config.TokenSource) (string, error) {
	if _, ok := os.LookupEnv(src.Env); src.Env != "" && !ok {
		return "", fmt.Errorf("environment variable %s is not set", src.Env)
	}
	return src.Read()
}

// observe lists up's tools and brings the pins up to date in one store
// transaction: a new tool is pending, an approved one listed differently
// is changed (blocked), one no longer listed is removed. Each change is
// audited, by whom (the principal whose call or review saw it). A tool
// whose name cannot be a comm.mcp tool, or whose definition cannot be
// pinned (ambiguous schema), is never pinned and so never usable.
func (u *upstreams) observe(ctx context.Context, s *upstreamSession, up config.Upstream, by string) (map[string]*pinning.Pin, error) {
	defs, err := s.ListTools(ctx)
	if err != nil {
		return nil, comm.MCPViolation(up.ID, err)
	}
	var changes []*pinning.Pin
	out := map[string]*pinning.Pin{}
	var skipped []string
	err = u.db.UpdateUpstreamPins(ctx, up.ID, func(cur map[string]*pinning.Pin) ([]*pinning.Pin, error) {
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
	})
	if err != nil {
		return nil, err
	}
	for _, p := range changes {
		u.appendPin(ctx, audit.UpstreamPin(u.now().UTC(), by, pinOf(p)))
	}
	if len(skipped) > 0 {
		u.log.Warn("upstream tools not pinnable (bad name, duplicate or ambiguous schema)", "upstream", up.ID, "count", len(skipped))
	}
	return out, nil
}

// pinOf is a pin as its audit records name it.
func pinOf(p *pinning.Pin) audit.Pin {
	return audit.Pin{Upstream: p.Upstream, Tool: p.Tool, State: string(p.State), SeenDigest: p.SeenDigest,
		ApprovedDigest: p.ApprovedDigest, Flags: len(p.Flags), Blocked: p.State == pinning.Changed}
}

// appendPin appends one record about a pin; the pin is stored either way.
func (u *upstreams) appendPin(ctx context.Context, rec *audit.Record) {
	if err := u.db.Append(context.WithoutCancel(ctx), rec); err != nil {
		u.log.Error("auditing a pin change", "err", err)
	}
}

// auditVia appends the record of an operator's approval of a pin, naming
// the transport the order came through ("cli" or "console").
//
// Transitional (issue 21): its only caller is the operator's side
// (upstreams_operator.go), which moves to its own package and then builds
// the record with audit.UpstreamApprove; this goes with it.
func (u *upstreams) auditVia(ctx context.Context, transport, by, capability string, p *pinning.Pin, reason string, err error) {
	rec := &store.Record{
		Time: u.now().UTC(), Principal: by, Transport: transport, Capability: capability, Decision: "allow", Outcome: "ok",
		Reason: reason, Extra: mustJSON(map[string]any{
			"upstream": p.Upstream, "tool": p.Tool, "state": p.State, "seen_digest": p.SeenDigest,
			"approved_digest": p.ApprovedDigest, "flags": len(p.Flags),
		}),
	}
	if p.State == pinning.Changed {
		rec.Decision = "deny"
	}
	if err != nil {
		rec.Outcome, rec.Error = "error", err.Error()
	}
	if aerr := u.db.Append(context.WithoutCancel(ctx), rec); aerr != nil {
		u.log.Error("auditing a pin change", "err", aerr)
	}
}

// check implements the pin half of toolkit.UpstreamPins.
func (u *upstreams) check(ctx context.Context, cfg *config.Config, upstream, tool string, args json.RawMessage) (string, error) {
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
	if err := v.validate(args); err != nil {
		var ve *violation.Error
		if errors.As(err, &ve) {
			return "", violation.Wrap(violation.UpstreamArguments, ve.Err, "tool %q of upstream %q: %s", tool, upstream, ve.Message)
		}
		return "", violation.Wrap(violation.UpstreamArguments, err, "the arguments do not match the pinned input schema")
	}
	return p.ApprovedDigest, nil
}

// validator compiles the approved input schema once per digest. A schema
// may not load anything ($ref to a file or URL): compileSchema's compiler
// has no loader for them.
func (u *upstreams) validator(p *pinning.Pin) (*schemaValidator, error) {
	if v, ok := u.schemas.Load(p.ApprovedDigest); ok {
		return v.(*schemaValidator), nil
	}
	doc := p.Approved.InputSchema
	if len(doc) == 0 {
		doc = json.RawMessage(`{"type":"object"}`)
	}
	v, err := compileSchema("mcp."+p.Upstream+"."+p.Tool, doc)
	if err != nil {
		return nil, err
	}
	u.schemas.Store(p.ApprovedDigest, v)
	return v, nil
}

// approved returns the catalog: the usable pins of configured upstreams.
func (u *upstreams) approved(ctx context.Context, cfg *config.Config) []toolkit.UpstreamTool {
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
		out = append(out, toolkit.UpstreamTool{Upstream: p.Upstream, Tool: p.Tool, Description: p.Approved.Description,
			InputSchema: p.Approved.InputSchema, Digest: p.ApprovedDigest})
	}
	return out
}

// upstreamPins is one call's toolkit.UpstreamPins.
type upstreamPins struct{ c *call }

var _ toolkit.UpstreamPins = (*upstreamPins)(nil)

// Check implements toolkit.UpstreamPins.
func (p *upstreamPins) Check(ctx context.Context, upstream, tool string, args json.RawMessage) (string, error) {
	r := p.c.s.r
	return r.upstreams.check(ctx, r.Config(), upstream, tool, args)
}

// callUpstream performs an approved comm.mcp need: connect, list the tools
// again (a rug pull between the approval and now is caught here, recorded,
// and blocks the call), check that the listed definition is still the one
// the need was checked against, call, and return the answer as untrusted
// content attributed to the upstream, the tool and the pinned digest.
func (r *Runner) callUpstream(ctx context.Context, principal string, pol *policy.Policy, need declarations.Need) (*toolkit.External, error) {
	cfg := r.Config()
	p := need.Parameters
	up, ok := cfg.Upstream(p.Upstream)
	if !ok {
		return nil, violation.New(violation.UpstreamUnavailable, "no upstream %q is configured", p.Upstream)
	}
	if err := checkUpstreamURL(pol, up); err != nil {
		return nil, err
	}
	digest, err := r.upstreams.check(ctx, cfg, p.Upstream, p.Tool, p.Arguments)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeoutOf(up), comm.ErrMCPTimeout)
	defer cancel()
	s, err := r.upstreams.dial(ctx, cfg, up, pol)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	pins, err := r.upstreams.observe(ctx, s, up, principal)
	if err != nil {
		return nil, err
	}
	pin := pins[p.Tool]
	switch {
	case pin == nil || pin.State == pinning.Removed:
		return nil, violation.New(violation.UpstreamNotApproved, "upstream %q no longer lists tool %q", p.Upstream, p.Tool)
	case pin.State == pinning.Changed || !pin.Usable() || pin.ApprovedDigest != digest:
		return nil, violation.New(violation.UpstreamChanged, "tool %q of upstream %q changed since it was approved; it is blocked until an operator reviews the change", p.Tool, p.Upstream)
	}
	res, err := s.CallTool(ctx, p.Tool, p.Arguments)
	if err != nil {
		return nil, comm.MCPViolation(p.Upstream, err)
	}
	if int64(len(res.Text)) > up.MaxResultBytes {
		return nil, violation.New(violation.UpstreamResultTooLarge, "upstream %q: the answer of %q has %d bytes, more than max_result_bytes (%d)", p.Upstream, p.Tool, len(res.Text), up.MaxResultBytes)
	}
	details := map[string]any{"upstream": p.Upstream, "tool": p.Tool, "pinned_sha256": digest, "upstream_error": res.IsError, "omitted_blocks": res.Omitted}
	if res.IsError {
		details["code"] = string(violation.UpstreamError)
	}
	return &toolkit.External{Text: res.Text, Source: MCPSource(p.Upstream, p.Tool, digest), ContentType: "text/plain",
		RetrievedAt: r.now().UTC(), Details: details}, nil
}

// upstreamURL is the URL the policy judges a call of capability c by: an
// HTTP upstream's own URL for mcp.<upstream>.<tool> (the network section
// then refuses its host as it refuses a fetch's: issue 15), "" otherwise
// (a stdio upstream reaches no network; other capabilities name their own).
func (r *Runner) upstreamURL(c string) string {
	rest, ok := strings.CutPrefix(c, "mcp.")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, ".")
	up, ok := r.Config().Upstream(id)
	if !ok || up.Stdio() {
		return ""
	}
	return up.URL
}

// checkUpstreamURL refuses an HTTP upstream the policy's network section
// does not allow, before anything connects: the same check, rule id and
// code (POLICY_DENIED, rule network) the policy step gives in planning.
// It runs again at execution because a declaration approved earlier may
// be collected under a policy that has since narrowed.
func checkUpstreamURL(pol *policy.Policy, up config.Upstream) error {
	if up.Stdio() {
		return nil
	}
	if pol == nil {
		return violation.New(violation.PolicyDenied, "mcp.%s: no policy to judge the upstream's host by", up.ID)
	}
	u, err := url.Parse(up.URL)
	if err == nil {
		err = pol.CheckURL(u)
	}
	if err != nil {
		return violation.Wrap(violation.PolicyDenied, err, "mcp.%s is denied by policy (rule network): %s", up.ID, strings.TrimSuffix(err.Error(), ": "+policy.ErrNetworkDenied.Error()))
	}
	return nil
}

// MCPSource is the attributed source of an upstream tool's answer: the
// upstream, the tool and the pinned definition's digest, covered by the
// attribution's signature.
func MCPSource(upstream, tool, digest string) string {
	return "mcp://" + upstream + "/" + tool + "?pin=sha256:" + digest
}

func timeoutOf(up config.Upstream) time.Duration {
	return time.Duration(up.TimeoutMS) * time.Millisecond
}
