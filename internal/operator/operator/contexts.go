package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/state"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
	"github.com/airlock-dev/airlock/internal/policy/limits"
	"github.com/airlock-dev/airlock/phasegate"
)

// Context is a runtime context as the store holds it.
type Context = contexts.Context

// ErrNoSuchContext is returned for an id that names no context.
var ErrNoSuchContext = errors.New("no such context")

// ErrAmbiguousID is returned for an id that names a context and a session
// onto another context.
var ErrAmbiguousID = errors.New("ambiguous context id")

// SetPhase moves a context between planning and execution on the
// operator's word (the agent never can). Every process serving the context
// sees it on the next call. A child context cannot be put in execution
// while its parent is in planning. The order is audited, refused or not.
func (o *API) SetPhase(ctx context.Context, contextID, phase, by, reason string) (*Context, error) {
	cx, err := o.setPhase(ctx, contextID, phase)
	rec := audit.Phase(o.now().UTC(), o.operator(by), contextID, phase, reason, err)
	if aerr := o.db.Append(ctx, rec); aerr != nil {
		return nil, fmt.Errorf("auditing the phase change: %w", aerr)
	}
	return cx, err
}

func (o *API) setPhase(ctx context.Context, id, phase string) (*Context, error) {
	if !contexts.ValidPhase(phase) {
		return nil, fmt.Errorf("phase %q (want planning or execution): %w", phase, phasegate.ErrUnknownPhase)
	}
	cx, err := o.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	if phase == contexts.PhaseExecution && cx.Parent != "" {
		parent, err := o.db.GetContext(ctx, cx.Parent)
		if err != nil {
			return nil, fmt.Errorf("reading parent context: %w", err)
		}
		if parent.Phase != contexts.PhaseExecution {
			return nil, fmt.Errorf("context %s: its parent %s is in %s: %w", cx.ID, parent.ID, parent.Phase, contexts.ErrWidens)
		}
	}
	return o.db.UpdateContext(ctx, cx.ID, func(c *contexts.Context) error {
		c.Phase, c.UpdatedAt = phase, o.now().UTC()
		return nil
	})
}

// lookup finds a context by its exact id, or by the exact id of a session
// onto it; never by a prefix or a name. An id that names a context and
// also a session onto another context is refused: the operator's order
// must reach the context they meant or none (TestPhaseRefusesUnknownOrAmbiguousIDs).
func (o *API) lookup(ctx context.Context, id string) (*Context, error) {
	cx, err := o.db.GetContext(ctx, id)
	if err != nil && !errors.Is(err, contexts.ErrNotFound) {
		return nil, err
	}
	s, serr := o.db.GetSession(ctx, id)
	switch {
	case err == nil && serr == nil && s.ContextID != cx.ID:
		return nil, fmt.Errorf("%q is context %s and a session onto context %s: %w", id, cx.ID, s.ContextID, ErrAmbiguousID)
	case err == nil:
		return cx, nil
	case serr == nil:
		return o.db.GetContext(ctx, s.ContextID)
	}
	return nil, fmt.Errorf("%q (see `airlock context list`): %w", id, ErrNoSuchContext)
}

// Context returns a context by id (or by the id of a session onto it).
func (o *API) Context(ctx context.Context, id string) (*Context, error) {
	return o.lookup(ctx, id)
}

// Contexts lists the contexts of principal (everyone's when empty).
func (o *API) Contexts(ctx context.Context, principal string) ([]*Context, error) {
	return o.db.ListContexts(ctx, principal)
}

// Sessions lists the open sessions onto a context (all contexts when empty).
func (o *API) Sessions(ctx context.Context, contextID string) ([]*contexts.Session, error) {
	return o.db.ListSessions(ctx, contextID, true)
}

// ChildSpec is what an operator asks of a new child context; empty fields
// inherit the parent's.
type ChildSpec struct {
	Parent string   // a context id, or a session id onto it
	Policy string   // the parent's policy or one that extends it
	Pools  []string // a subset of the parent's pools
	Phase  string   // planning, or execution if the parent is in execution
	// Task, when set, is the principal's task text: the child's trusted
	// input (provenance_operator.go).
	Task string
}

// CreateChild creates a context that restricts its parent and returns it
// with the handle a client presents to run in it. cfg supplies the
// policies, to check the child's policy extends the parent's.
func (o *API) CreateChild(ctx context.Context, cfg *config.Config, spec ChildSpec, by, reason string) (*Context, string, error) {
	if spec.Task != "" {
		if err := checkTask(spec.Task); err != nil {
			return nil, "", err
		}
	}
	cx, handle, err := o.createChild(ctx, cfg, spec, by)
	var created *audit.Context
	if cx != nil {
		created = &audit.Context{ID: cx.ID, Parent: cx.Parent, Phase: cx.Phase, Policy: cx.Policy, Pools: cx.Pools}
	}
	rec := audit.ChildContext(o.now().UTC(), o.operator(by), created, reason, err)
	if aerr := o.db.Append(ctx, rec); aerr != nil {
		return nil, "", fmt.Errorf("auditing the new context: %w", aerr)
	}
	if err == nil && spec.Task != "" {
		// The handle is returned only with its task in place.
		if err := o.addTask(ctx, cx, spec.Task, by, reason); err != nil {
			return nil, "", err
		}
	}
	return cx, handle, err
}

func (o *API) createChild(ctx context.Context, cfg *config.Config, spec ChildSpec, by string) (*Context, string, error) {
	parent, err := o.lookup(ctx, spec.Parent)
	if err != nil {
		return nil, "", err
	}
	policies, err := cfg.PolicySet()
	if err != nil {
		return nil, "", err
	}
	now := o.now().UTC().Truncate(time.Microsecond)
	child := &contexts.Context{ID: "ctx_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:24], Parent: parent.ID,
		Principal: parent.Principal, Role: parent.Role, Policy: parent.Policy, PolicyVersion: parent.PolicyVersion,
		Phase: contexts.PhasePlanning, Pools: slices.Clone(parent.Pools), CreatedAt: now, CreatedBy: "operator:" + by, UpdatedAt: now}
	if spec.Policy != "" {
		pol, ok := policies.Get(spec.Policy)
		if !ok {
			return nil, "", fmt.Errorf("policy %q: %w", spec.Policy, config.ErrUnknownReference)
		}
		child.Policy, child.PolicyVersion = spec.Policy, pol.Version()
	}
	if spec.Pools != nil {
		child.Pools = slices.Clone(spec.Pools)
	}
	if spec.Phase != "" {
		child.Phase = spec.Phase
	}
	if err := contexts.CheckRestricts(parent, child, policies); err != nil {
		return nil, "", err
	}
	if err := o.db.CreateContext(ctx, child); err != nil {
		return nil, "", err
	}
	key, err := o.db.Key(ctx, state.ContextHandleKey)
	if err != nil {
		return nil, "", fmt.Errorf("loading the context handle key: %w", err)
	}
	return child, state.ContextHandle(key, child.ID), nil
}

// ContextUsage is what a context has consumed, as the store holds it.
func (o *API) ContextUsage(ctx context.Context, contextID string) (limits.Usage, error) {
	b, err := o.db.Usage(ctx, state.CounterKey(contextID))
	if err != nil {
		return limits.Usage{}, err
	}
	st, err := state.DecodeUsage(b)
	if err != nil {
		return limits.Usage{}, err
	}
	return st.Usage(), nil
}
