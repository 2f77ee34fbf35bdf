package upstream

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"

	"github.com/airlock-dev/airlock/internal/audit/audit"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/comm"
	"github.com/airlock-dev/airlock/internal/execution/egress"
	"github.com/airlock-dev/airlock/internal/execution/sandbox"
	"github.com/airlock-dev/airlock/internal/policy/policy"
)

// Egress of sandboxed stdio upstreams (issue 15). A stdio upstream runs in
// the pipeline sandbox, whose network namespace routes nowhere. One whose
// config names hosts gets one way out: an egress.Proxy that Airlock serves
// on a listener inside the run's namespace (sandbox.Loopback, 127.0.0.1:
// egressPort — the only port Landlock lets the upstream connect to), named
// in its environment as HTTPS_PROXY and HTTP_PROXY. The proxy admits a
// host only if it is one of the upstream's hosts (exact, with its port)
// and the calling policy's network section allows it, and connects with
// comm's connect-time checked dialer (comm.fetch.allow_private and the
// policy's address rules). Every request is audited (upstream.egress):
// method, host, port, decision. Tests: TestUpstreamStdioEgress,
// TestUpstreamStdioSandboxed (no hosts: no network at all).

// egressPort is the proxy's port inside the sandbox (squid's; the run's
// namespace is its own, so it collides with nothing).
const egressPort = 3128

// egressCaller is whose comm.mcp call a stdio upstream serves: the
// principal (for the audit) and the policy whose network section judges
// its hosts. Carried in the call's context from the broker to Dial.
type egressCaller struct {
	principal string
	policy    *policy.Policy
	// inCall, when set, says whether a call is in flight on the warm
	// session: its egress admits nothing between calls (warmcall.go).
	inCall func() bool
}

type egressCallerKey struct{}

// withCaller marks ctx as a call by principal under p: a stdio upstream
// dialled with it admits through its egress what p's network section
// allows, while inCall (if set) says a call is in flight.
func withCaller(ctx context.Context, principal string, p *policy.Policy, inCall func() bool) context.Context {
	return context.WithValue(ctx, egressCallerKey{}, egressCaller{principal: principal, policy: p, inCall: inCall})
}

// egressFor returns the sandbox listener and the environment of up's
// egress, or nil when up names no hosts (no network at all). Without a
// calling policy in ctx (an operator's review lists tools, it is nobody's
// call) every request is refused, and audited.
func (u *Connector) egressFor(ctx context.Context, cfg *config.Config, up config.Upstream) (*sandbox.Loopback, []string, error) {
	if len(up.Hosts) == 0 {
		return nil, nil, nil
	}
	hosts, err := up.EgressHosts()
	if err != nil {
		return nil, nil, err
	}
	var targets []egress.Target
	for _, h := range hosts {
		if h.Port != 0 {
			targets = append(targets, egress.Target{Host: h.Host, Port: h.Port})
			continue
		}
		targets = append(targets, egress.Target{Host: h.Host, Port: 443}, egress.Target{Host: h.Host, Port: 80})
	}
	private, err := cfg.Comm.Fetch.PrivatePrefixes()
	if err != nil {
		return nil, nil, err
	}
	caller, _ := ctx.Value(egressCallerKey{}).(egressCaller)
	by := caller.principal
	if by == "" {
		by = "upstream-review"
	}
	opts := egress.Options{
		Targets: targets,
		Logger:  u.log,
		Audit: func(ev egress.Event) {
			u.auditEgress(context.WithoutCancel(ctx), by, up.ID, ev)
		},
	}
	var ipRules comm.IPRules
	if caller.policy != nil {
		pol := caller.policy
		ipRules = pol
		opts.Check = func(scheme, host string, port int) error {
			if caller.inCall != nil && !caller.inCall() {
				return errNoCall
			}
			return pol.CheckURL(&url.URL{Scheme: scheme, Host: net.JoinHostPort(host, strconv.Itoa(port))})
		}
	}
	opts.Dial = comm.CheckedDialer(private, ipRules, u.resolver)
	p, err := egress.New(opts)
	if err != nil {
		return nil, nil, err
	}
	proxy := fmt.Sprintf("http://127.0.0.1:%d", egressPort)
	env := []string{
		"HTTPS_PROXY=" + proxy, "HTTP_PROXY=" + proxy, "https_proxy=" + proxy, "http_proxy=" + proxy,
		// Node 24+ (and 22.21+) honour the variables above only with
		// this; older Node ignores it, and its upstream must use a
		// proxy-aware agent (README, "Upstream MCP servers").
		"NODE_USE_ENV_PROXY=1",
	}
	return &sandbox.Loopback{Port: egressPort, Serve: p.Serve}, env, nil
}

// auditEgress appends one record per proxy request: never its content.
func (u *Connector) auditEgress(ctx context.Context, by, upstream string, ev egress.Event) {
	rec := audit.UpstreamEgress(u.now().UTC(), by, upstream, audit.Egress{Method: ev.Method, Host: ev.Host, Port: ev.Port,
		Allowed: ev.Allowed, Code: ev.Code, Err: ev.Err})
	if err := u.db.Append(ctx, rec); err != nil {
		u.log.Error("auditing an upstream's egress", "upstream", upstream, "err", err)
	}
}
