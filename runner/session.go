package runner

import (
	"context"
	"fmt"

	"github.com/airlock-dev/airlock/limits"
	"github.com/airlock-dev/airlock/phasegate"
	"github.com/airlock-dev/airlock/policy"
	"github.com/airlock-dev/airlock/sources"
	"github.com/airlock-dev/airlock/store"
	"github.com/google/uuid"
)

// SessionParams identify who opens a session and over what.
type SessionParams struct {
	// ID is the transport's session id; empty means the runner mints one.
	ID        string
	Principal string
	Role      string
	Transport string // "stdio", "streamable-http", "sse", "inprocess"
}

// Session is one agent session: a frozen set of bound pools (the execution
// source context), a server-owned phase, the role's policy and its limits.
// The agent can change none of these.
type Session struct {
	r         *Runner
	id        string
	contextID string
	principal string
	role      string
	transport string
	phase     *phasegate.State
	policy    *policy.Policy
	sources   *sources.Context
	limits    *limits.Tracker
	broker    *sessionBroker
}

// OpenSession creates a session for a principal in a role and records it.
func (r *Runner) OpenSession(ctx context.Context, p SessionParams) (*Session, error) {
	gen := r.gen.Load()
	role, ok := gen.cfg.Roles[p.Role]
	if !ok {
		return nil, fmt.Errorf("role %q: %w", p.Role, ErrUnknownRole)
	}
	pol, ok := gen.policies.Get(role.Policy)
	if !ok {
		return nil, fmt.Errorf("policy %q of role %q: %w", role.Policy, p.Role, ErrUnknownRole)
	}
	s := &Session{
		r: r, id: p.ID, principal: p.Principal, role: p.Role, transport: p.Transport,
		contextID: "ctx_" + uuid.NewString(),
		phase:     phasegate.NewState(role.InitialPhase),
		policy:    pol,
		limits:    limits.NewTracker(pol.Limits(), r.now),
	}
	if s.id == "" {
		s.id = uuid.NewString()
	}
	s.broker = newSessionBroker(r.broker, s)
	var err error
	if s.sources, err = r.pools.Bind(s.contextID, role.Pools); err != nil {
		return nil, fmt.Errorf("binding pools of role %q: %w", p.Role, err)
	}
	rec := s.record("session.open")
	rec.Outcome, rec.Reason = "ok", fmt.Sprintf("pools bound: %v", role.Pools)
	rec.Extra = mustJSON(map[string]any{"pools_bound": s.sources.Usage().PoolsBound})
	if err := r.db.Append(context.WithoutCancel(ctx), rec); err != nil {
		return nil, fmt.Errorf("auditing session open: %w", err)
	}
	r.mu.Lock()
	r.sessions[s.id] = s
	r.mu.Unlock()
	return s, nil
}

// Session returns an open session by id.
func (r *Runner) Session(id string) (*Session, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sessions[id]
	return s, ok
}

// CloseSession ends a session and records its source usage.
func (r *Runner) CloseSession(ctx context.Context, id string) {
	r.mu.Lock()
	s, ok := r.sessions[id]
	delete(r.sessions, id)
	r.mu.Unlock()
	if ok {
		s.close(ctx)
	}
}

func (s *Session) close(ctx context.Context) {
	rec := s.record("session.close")
	rec.Outcome = "ok"
	rec.Extra = mustJSON(s.sources.Usage())
	if err := s.r.db.Append(context.WithoutCancel(ctx), rec); err != nil {
		s.r.log.Error("auditing session close", "session", s.id, "err", err)
	}
}

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// ContextID is the id of the session's execution source context.
func (s *Session) ContextID() string { return s.contextID }

// Principal is who the session belongs to.
func (s *Session) Principal() string { return s.principal }

// Phase is the session's current phase.
func (s *Session) Phase() string { return s.phase.Phase() }

// Usage is the session's source-usage summary so far.
func (s *Session) Usage() sources.UsageSummary { return s.sources.Usage() }

func (s *Session) record(capability string) *store.Record {
	return &store.Record{
		Time: s.r.now().UTC(), SessionID: s.id, ContextID: s.contextID, Principal: s.principal,
		Role: s.role, Transport: s.transport, Capability: capability, Phase: s.phase.Phase(),
	}
}
