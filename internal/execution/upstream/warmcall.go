package upstream

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/comm"
	"github.com/airlock-dev/airlock/internal/execution/sandbox"
	"github.com/airlock-dev/airlock/internal/execution/upstream/warm"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/policy"
)

// Calls on warm sessions (issue 23 items 1 and 2). A comm.mcp call runs on
// the session of its key (warm.Key: the upstream, its configuration, the
// scope — the caller's context by default —, the principal and role, and
// the policy its egress is judged by), started on first use.
//
// The pins, without listing every call: a session's tools are listed, and
// the pins brought up to date (Observe), before a call when
//
//   - the session is new;
//   - the upstream sent notifications/tools/list_changed since the last
//     listing (it marks the session dirty; over stdio a notification the
//     upstream wrote before an answer is handled before that answer is
//     returned, so a change announced during call N is listed before call
//     N+1: TestWarmRugPullCaughtBeforeUse);
//   - the upstream did not declare tools.listChanged (it promises no
//     notification, so it is listed before every call, as a cold session);
//   - the last listing is older than pin_check_interval_seconds; or
//   - the upstream's pin_check is every_call (the default for an HTTP
//     upstream: a notification it sends outside a request's stream has no
//     order with the next call, so only listing first keeps the rule
//     above; TestUpstreamRugPull).
//
// Otherwise the call is checked against what this session last listed:
// the approved digest must be the one it listed for the tool. The store's
// pin is read before every call (Check), so an operator's decision or a
// change another session saw applies at once. What this does not catch
// (SECURITY.md): an upstream that declared tools.listChanged and changes a
// definition without announcing it is caught at the next listing, within
// the interval.

// errNoCall refuses a warm stdio upstream's egress between calls: its
// process lives on, but it reaches the network only while a call it
// serves is in flight, as a process that lived for one call did.
var errNoCall = errors.New("no call in flight on this upstream session")

// warmLifetime bounds a warm process's life (the sandbox's wall clock):
// a session older than this is ended, and the next call starts afresh.
const warmLifetime = time.Hour

// stderrLines and stderrLineBytes bound what upstream.exited records of
// a process's last words.
const (
	stderrLines     = 20
	stderrLineBytes = 512
)

// dialOpts make dial start a warm session: notify receives the upstream's
// notifications; warm gives its process the warm lifetime.
type dialOpts struct {
	warm   bool
	notify func(method string)
}

// wall is the sandbox's wall clock for up's process.
func (o dialOpts) wall(up config.Upstream) time.Duration {
	if o.warm {
		return warmLifetime
	}
	return Timeout(up) + stdioGrace
}

// Caller is whose comm.mcp call it is, and what its connection carries
// on its behalf (brokered credentials: brokered.go).
type Caller struct {
	Principal, Role, Context string
	Policy                   *policy.Policy
	Extra                    *Extra
}

// live is one warm session: warm.Conn over a Session, with the pins'
// bookkeeping.
type live struct {
	s      *Session
	inCall atomic.Bool // a call is in flight (the egress gate)
	dirty  atomic.Bool // notifications/tools/list_changed since the last listing

	// Only the one call in flight (warm serialises them) uses these.
	listed   map[string]string // tool → digest it was listed with; nil before the first listing
	listedAt time.Time
}

func (l *live) Done() <-chan struct{} { return l.s.done }
func (l *live) Stop()                 { l.s.Close() }
func (l *live) Exit() *warm.Exit {
	if l.s.exit == nil {
		return nil
	}
	return l.s.exit()
}

// Key is the warm session a call of c on up uses.
func Key(up config.Upstream, c Caller) warm.Key {
	k := warm.Key{Upstream: up.ID, Config: configDigest(up, c.Extra), Principal: c.Principal, Policy: c.Policy.Name() + "@" + c.Policy.Version()}
	switch up.SessionScope() {
	case config.SessionsShared:
		k.Scope, k.Principal = config.SessionsShared+":"+c.Role, ""
	case config.SessionsPrincipal:
		k.Scope = config.SessionsPrincipal + ":" + c.Principal + ":" + c.Role
	default:
		k.Scope = config.SessionsContext + ":" + c.Context
	}
	return k
}

// configDigest fingerprints up as configured (the sources of its own
// secrets) and the brokered credentials its session starts with (their
// values: a rotated one starts a new session; only the digest is kept).
func configDigest(up config.Upstream, extra *Extra) string {
	h := sha256.New()
	b, _ := json.Marshal(up)
	h.Write(b)
	if extra != nil {
		b, _ = json.Marshal([]any{extra.Headers, extra.Env})
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Call performs one approved call of tool on up for c, on c's warm
// session, after checking that the session lists the tool with digest
// (the approved digest Check returned). ctx bounds the call (its timeout);
// a session started for it outlives it.
func (u *Connector) Call(ctx context.Context, cfg *config.Config, up config.Upstream, c Caller, tool string, args json.RawMessage, digest string) (*comm.MCPResult, error) {
	key := Key(up, c)
	lim := warm.Limits{Idle: up.IdleTimeout(), Max: cfg.UpstreamSessions.Max, MaxPerPrincipal: cfg.UpstreamSessions.MaxPerPrincipal}
	var res *comm.MCPResult
	start := func(ctx context.Context) (warm.Conn, error) { return u.startLive(ctx, cfg, up, c, key) }
	call := func(conn warm.Conn, _ bool) error {
		l := conn.(*live)
		l.inCall.Store(true)
		defer l.inCall.Store(false)
		l.s.Refill()
		if err := u.checkListed(ctx, l, up, c.Principal, tool, digest); err != nil {
			return err
		}
		began := u.now()
		r, err := l.s.CallTool(ctx, tool, args)
		u.observeCall(up.ID, began, u.now().Sub(began), err)
		if err != nil {
			return warm.Discard(comm.MCPViolation(up.ID, err))
		}
		res = r
		return nil
	}
	err := u.pool.Do(ctx, key, lim, start, call)
	if errors.Is(err, comm.ErrMCPSessionEnded) {
		// The HTTP server dropped the session before handling the
		// request: a new one is initialized (and listed), once.
		err = u.pool.Do(ctx, key, lim, start, call)
	}
	switch {
	case errors.Is(err, warm.ErrFull):
		return nil, violation.Wrap(violation.UpstreamUnavailable, err, "upstream %q: every warm session allowed is in use; try again", up.ID)
	case err != nil:
		var ve *violation.Error
		if !errors.As(err, &ve) {
			err = comm.MCPViolation(up.ID, err)
		}
		return nil, err
	}
	return res, nil
}

// startLive starts c's warm session of up: in its sandbox with its egress
// judged by c's policy (only while a call is in flight), or an HTTP
// session whose connections c's policy judges.
func (u *Connector) startLive(ctx context.Context, cfg *config.Config, up config.Upstream, c Caller, key warm.Key) (*live, error) {
	l := &live{}
	by := c.Principal
	if key.Principal == "" {
		by = "shared:" + key.Scope
	}
	ctx = withCaller(ctx, by, c.Policy, l.inCall.Load)
	s, err := u.dial(ctx, cfg, up, c.Policy, c.Extra, dialOpts{warm: true, notify: func(method string) {
		if method == "notifications/tools/list_changed" {
			l.dirty.Store(true)
		}
	}})
	if err != nil {
		return nil, err
	}
	l.s = s
	return l, nil
}

// checkListed is the pins' half of a warm call: list again when the
// session needs it (see the top of this file), then refuse a tool this
// session does not list with the approved digest.
func (u *Connector) checkListed(ctx context.Context, l *live, up config.Upstream, by, tool, digest string) error {
	now := u.now()
	if l.listed == nil || up.PinCheckMode() == config.PinCheckEveryCall || !l.s.ListChanged() || l.dirty.Load() || now.Sub(l.listedAt) >= up.PinCheckInterval() {
		// Cleared before listing: a notification during it marks the
		// session again.
		l.dirty.Store(false)
		pins, err := u.Observe(ctx, l.s, up, by)
		if err != nil {
			l.dirty.Store(true)
			if me := (*comm.MCPError)(nil); errors.As(err, &me) {
				return warm.Discard(err) // the session broke; the store's errors leave it be
			}
			return err
		}
		l.listed, l.listedAt = map[string]string{}, now
		for name, p := range pins {
			if p.SeenDigest != "" {
				l.listed[name] = p.SeenDigest
			}
		}
	}
	seen, ok := l.listed[tool]
	switch {
	case !ok:
		return violation.New(violation.UpstreamNotApproved, "upstream %q no longer lists tool %q", up.ID, tool)
	case seen != digest:
		return violation.New(violation.UpstreamChanged, "tool %q of upstream %q changed since it was approved; it is blocked until an operator reviews the change", tool, up.ID)
	}
	return nil
}

// StopWarm stops every warm session of this process (the kill switch)
// and returns once their processes are gone.
func (u *Connector) StopWarm() int { return u.pool.StopAll() }

// Close stops the warm sessions and refuses new ones.
func (u *Connector) Close() {
	if u != nil {
		u.pool.Close()
		u.stats.close()
	}
}

// exitOf is how a stdio upstream's process ended, nil when this side
// stopped it (the sandbox's "canceled"). Its stderr lines were scrubbed
// as they were read (newStderrTail).
func exitOf(res *sandbox.Result, runErr error, tail *stderrTail) *warm.Exit {
	if res != nil && res.KillReason == sandbox.KillCanceled {
		return nil
	}
	x := &warm.Exit{Stderr: tail.lines()}
	switch {
	case res == nil:
		x.Status = "did not run"
		if runErr != nil {
			x.Status = "did not run: " + runErr.Error()
		}
	case res.Signal != "" && res.KillReason != "":
		x.Status = fmt.Sprintf("signal %s (%s)", res.Signal, res.KillReason)
	case res.Signal != "":
		x.Status = "signal " + res.Signal
	default:
		x.Status = fmt.Sprintf("exit %d", res.ExitCode)
	}
	return x
}

// envScrubber replaces every value of env of at least 8 bytes; longest
// is the longest such value (0: none).
func envScrubber(env []string) (r *strings.Replacer, longest int) {
	var pairs []string
	for _, kv := range env {
		if _, v, ok := strings.Cut(kv, "="); ok && len(v) >= 8 {
			pairs = append(pairs, v, "[value of its environment]")
			longest = max(longest, len(v))
		}
	}
	return strings.NewReplacer(pairs...), longest
}

// stderrTail drains a process's stderr and keeps its last lines: what
// upstream.exited says of a crash.
//
// The lines are the upstream's own text: every value of its environment
// of 8 bytes or more (its configured secrets among them) is replaced
// (TestWarmCrashRestartedAndAudited) — in the whole line, before it is
// cut to stderrLineBytes, so a cut cannot leave a piece of a value the
// replacement no longer sees (FuzzStderrScrub). A line longer than the
// scanner's 32 KiB is kept by its first piece, less as many bytes as the
// longest value could leave there cut; the rest of the line is dropped,
// not kept as lines of its own that could begin inside a value.
type stderrTail struct {
	r     *os.File // the read end, until drain
	mu    sync.Mutex
	ring  []string
	ended chan struct{}
}

// newStderrTail returns the tail and the write end to give the process
// (the caller closes its copy once the process has ended); drain starts
// reading it.
func newStderrTail() (*stderrTail, *os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	return &stderrTail{r: r, ended: make(chan struct{})}, w, nil
}

// drain reads the tail of a process started with env until every writer
// has closed the pipe.
func (t *stderrTail) drain(env []string) {
	scrub, longest := envScrubber(env)
	r := t.r
	go func() {
		defer close(t.ended)
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 4096), 64<<10)
		var cut, rest bool // this piece was cut from a longer line; it is the rest of one
		sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
			adv, tok, err := bufio.ScanLines(data, atEOF)
			cut = adv == 0 && tok == nil && err == nil && len(data) >= 32<<10
			if cut { // one endless line: hand it over in pieces, still drained
				return len(data), data, nil
			}
			return adv, tok, err
		})
		for sc.Scan() {
			skip := rest
			rest = cut
			if skip {
				continue
			}
			line := sc.Text()
			if cut {
				line = line[:max(0, len(line)-max(0, longest-1))]
			}
			if line = scrub.Replace(line); len(line) > stderrLineBytes {
				line = line[:stderrLineBytes]
			}
			t.mu.Lock()
			if len(t.ring) == stderrLines {
				t.ring = append(t.ring[:0], t.ring[1:]...)
			}
			t.ring = append(t.ring, line)
			t.mu.Unlock()
		}
	}()
}

// wait returns once the pipe has ended (every writer closed it).
func (t *stderrTail) wait() { <-t.ended }

func (t *stderrTail) lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.ring...)
}
