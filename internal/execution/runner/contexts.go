package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/execution/derived"
	"github.com/airlock-dev/airlock/internal/execution/provtrace"
	"github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/internal/policy/policy"
	"github.com/airlock-dev/airlock/sources"
)

// maxChain bounds how deep child contexts nest; deeper chains (only a
// corrupted store could hold one) are refused rather than walked forever.
// It is provtrace's bound, so the operator's walk of a chain and the
// runner's stop at the same depth.
const maxChain = provtrace.MaxChain

// resolveContext finds the context a principal's calls run in, as bind
// allows: the one handle names, else the bound one, else the default
// context of principal and role, created on first use and rebound when the
// role's policy or pools changed. Every chain must still restrict its parent.
func (r *Runner) resolveContext(ctx context.Context, principal, role, handle string, bind contexts.Binding) (*contexts.Context, error) {
	id := bind.Context // the configuration names it: no handle to verify
	if handle != "" {
		var ok bool
		if id, ok = state.ContextOfHandle(r.handleKey, handle); !ok {
			return nil, violation.Wrap(violation.ContextInvalid, ErrContextHandle, "the context handle is not one this server issued")
		}
	}
	if id != "" {
		return r.admitContext(ctx, id, principal, role, bind)
	}
	gen := r.gen.Load()
	rc, ok := gen.cfg.Roles[role]
	if !ok {
		return nil, fmt.Errorf("role %q: %w", role, ErrUnknownRole)
	}
	pol, ok := gen.policies.Get(rc.Policy)
	if !ok {
		return nil, fmt.Errorf("policy %q of role %q: %w", rc.Policy, role, ErrUnknownRole)
	}
	cx, id, err := contexts.LoadDefault(ctx, r.db, principal, role)
	if errors.Is(err, contexts.ErrNotFound) {
		now := r.now().UTC().Truncate(time.Microsecond) // as the store keeps it
		cx, err = r.db.EnsureContext(ctx, &contexts.Context{ID: id, Principal: principal, Role: role, Policy: rc.Policy,
			PolicyVersion: pol.Version(), Phase: rc.InitialPhase, Pools: slices.Clone(rc.Pools), CreatedAt: now, CreatedBy: "airlock", UpdatedAt: now})
		if err == nil && cx.CreatedAt.Equal(now) {
			r.auditContext(ctx, audit.ContextCreate(r.now().UTC(), auditedContext(cx), "default context of "+principal))
		}
	}
	if err != nil {
		return nil, fmt.Errorf("loading context: %w", err)
	}
	if cx.Policy != rc.Policy || cx.PolicyVersion != pol.Version() || !slices.Equal(cx.Pools, rc.Pools) {
		// The role's configuration changed (a reload or a restart): the
		// default context follows its role; its phase, usage and
		// declarations stay. Its role never changes: it is in the key.
		cx, err = r.db.UpdateContext(ctx, id, func(c *contexts.Context) error {
			c.Policy, c.PolicyVersion, c.Pools, c.UpdatedAt = rc.Policy, pol.Version(), slices.Clone(rc.Pools), r.now().UTC()
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("rebinding context: %w", err)
		}
		r.auditContext(ctx, audit.ContextRebind(r.now().UTC(), auditedContext(cx), "the role's policy or pools changed"))
	}
	return cx, bind.Admit([]*contexts.Context{cx}, principal, role)
}

// admitContext loads context id and its ancestors and admits it for
// principal in role under bind.
func (r *Runner) admitContext(ctx context.Context, id, principal, role string, bind contexts.Binding) (*contexts.Context, error) {
	chain, err := r.contextChain(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := bind.Admit(chain, principal, role); err != nil {
		return nil, err
	}
	return chain[0], nil
}

// contextChain loads a context and its ancestors, the context first, and
// checks that each still restricts its parent (a parent narrowed by an
// operator or a reload makes a wider child unusable: fail closed).
func (r *Runner) contextChain(ctx context.Context, id string) ([]*contexts.Context, error) {
	var chain []*contexts.Context
	policies := r.gen.Load().policies
	for next := id; next != ""; {
		if len(chain) == maxChain {
			return nil, violation.New(violation.ContextInvalid, "context %s nests deeper than %d", id, maxChain)
		}
		cx, err := r.db.GetContext(ctx, next)
		if errors.Is(err, contexts.ErrNotFound) {
			return nil, violation.Wrap(violation.ContextInvalid, err, "context %s does not exist", boundedName(next))
		}
		if err != nil {
			return nil, violation.Wrap(violation.Unavailable, err, "the context store cannot be read")
		}
		if n := len(chain); n > 0 {
			if err := contexts.CheckRestricts(cx, chain[n-1], policies); err != nil {
				return nil, violation.Wrap(violation.ContextInvalid, err, "context %s no longer restricts its parent", chain[n-1].ID)
			}
		}
		chain = append(chain, cx)
		next = cx.Parent
	}
	return chain, nil
}

// effectivePhase is planning if any context in the chain is in planning:
// a child can never run where its parent may not.
func effectivePhase(chain []*contexts.Context) string {
	for _, c := range chain {
		if c.Phase != contexts.PhaseExecution {
			return c.Phase
		}
	}
	return contexts.PhaseExecution
}

// binding is this process's binding of one context's pools.
type binding struct {
	pools string // the pool ids it was made for, joined
	sc    *sources.Context
}

// bound returns this process's binding of a context's pools, made once per
// context and pool set (the binding itself is frozen in the store; a
// rebound default context gets a new one).
func (r *Runner) bound(ctx context.Context, cx *contexts.Context) (*sources.Context, error) {
	key := strings.Join(cx.Pools, "\x00") + "\x01" + cx.Env[derived.EnvKey]
	if v, ok := r.bindings.Load(cx.ID); ok && v.(*binding).pools == key {
		return v.(*binding).sc, nil
	}
	sc, err := r.pools.Bind(cx.ID, r.derived.BoundIDs(ctx, cx))
	if err != nil {
		return nil, fmt.Errorf("binding pools of context %s: %w", cx.ID, err)
	}
	r.bindings.Store(cx.ID, &binding{pools: key, sc: sc})
	return sc, nil
}

// boundUsage is this process's source-usage summary of a context.
func (r *Runner) boundUsage(contextID string) (sources.UsageSummary, bool) {
	v, ok := r.bindings.Load(contextID)
	if !ok {
		return sources.UsageSummary{}, false
	}
	return v.(*binding).sc.Usage(), true
}

// auditContext writes rec, the record of a change to a context; a
// failure is logged (the context is changed already).
func (r *Runner) auditContext(ctx context.Context, rec *audit.Record) {
	if err := r.db.Append(context.WithoutCancel(ctx), rec); err != nil {
		r.log.Error("auditing a context change", "context", rec.ContextID, "err", err)
	}
}

// auditedContext is cx as its records name it.
func auditedContext(cx *contexts.Context) audit.Context {
	return audit.Context{ID: cx.ID, Parent: cx.Parent, Principal: cx.Principal, Role: cx.Role, Phase: cx.Phase,
		Policy: cx.Policy, PolicyVersion: cx.PolicyVersion, Pools: cx.Pools}
}

// policyOf is the compiled policy a context runs under now; a context whose
// policy a reload removed is refused (fail closed).
func (r *Runner) policyOf(cx *contexts.Context) (*policy.Policy, error) {
	pol, ok := r.gen.Load().policies.Get(cx.Policy)
	if !ok {
		return nil, violation.New(violation.Unavailable, "the policy %q of this context no longer exists; an operator must rebind it", cx.Policy)
	}
	return pol, nil
}
