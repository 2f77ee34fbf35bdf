package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/contexts"
)

// SessionParams identify who opens a session and over what.
type SessionParams struct {
	// ID is the transport's session id; empty means the runner mints one.
	ID        string
	Principal string
	Role      string
	Transport string // "stdio", "streamable-http", "sse", "inprocess"
	// ContextHandle names a child context by its server-minted handle;
	// empty means the principal's default context.
	ContextHandle string
	// Elicitation records that the client declared the elicitation
	// capability when it opened the session.
	Elicitation bool
	// ClientID is the OAuth client the caller's access token was issued
	// to, recorded beside the principal ("" for static tokens).
	ClientID string
	// Binding is what the caller's credential allows of contexts.
	Binding contexts.Binding
	// MaxOpen caps the principal's open sessions over Transport (0 = no
	// cap; at the cap the least recently used one is evicted, audited, then
	// told to OnEvict); Idle is the idle timeout sessions are counted with.
	MaxOpen int
	Idle    time.Duration
	OnEvict func(sessionID string)
}

// Session is a transport's handle onto a runtime context: who is calling,
// over what, and which context their calls run in. It holds no state of
// its own: the phase, the pool binding, limit usage and declarations live
// in the context, in the store, so that reconnecting, ending a session or
// restarting the server changes none of them.
type Session struct {
	r           *Runner
	id          string // "" for a sessionless (2026-07-28) request
	contextID   string
	principal   string
	role        string
	transport   string
	elicitation bool
	clientID    string // OAuth client of the current request's token
}

// Errors from AttachSession, for the transport to map onto status codes;
// each is also a *violation.Error with the matching SESSION_* code.
var (
	ErrSessionUnknown = errors.New("no such session")
	ErrSessionExpired = errors.New("session closed or idle too long")
	ErrSessionForeign = errors.New("session belongs to another principal")
	ErrContextHandle  = errors.New("context handle is not valid for this principal")
)

// sessionless is the session id recorded for calls made without a
// transport session (protocol 2026-07-28).
const sessionless = "sessionless"

// OpenSession opens a transport session onto the principal's context (the
// default one, or the child p.ContextHandle names) and records it.
func (r *Runner) OpenSession(ctx context.Context, p SessionParams) (*Session, error) {
	cx, err := r.resolveContext(ctx, p.Principal, p.Role, p.ContextHandle, p.Binding)
	if err != nil {
		return nil, err
	}
	if p.ID == "" {
		p.ID = uuid.NewString()
	}
	now := r.now().UTC()
	row := &contexts.Session{ID: p.ID, ContextID: cx.ID, Principal: p.Principal, Transport: p.Transport,
		Elicitation: p.Elicitation, CreatedAt: now, LastSeen: now}
	evicted, err := r.db.OpenSession(ctx, row, p.MaxOpen, p.Idle)
	if err != nil {
		return nil, fmt.Errorf("opening session: %w", err)
	}
	for _, ev := range evicted {
		r.auditSessionEnd(ctx, ev, func(at time.Time, a audit.Actor, usage any) *audit.Record {
			return audit.SessionEvict(at, a, p.MaxOpen, p.ID, usage)
		})
		if p.OnEvict != nil {
			p.OnEvict(ev.ID)
		}
	}
	s := &Session{r: r, id: p.ID, contextID: cx.ID, principal: p.Principal, role: p.Role, transport: p.Transport, elicitation: p.Elicitation, clientID: p.ClientID}
	rec := audit.SessionOpen(r.now().UTC(), s.actor(), cx.Phase, cx.Policy, cx.Pools)
	if err := r.db.Append(context.WithoutCancel(ctx), rec); err != nil {
		return nil, fmt.Errorf("auditing session open: %w", err)
	}
	return s, nil
}

// AttachSession returns the session a transport id names, if it is open,
// not idle past idle, and belongs to principal. Every refusal is a
// *violation.Error wrapping ErrSessionUnknown, ErrSessionExpired or
// ErrSessionForeign; the caller audits it (RecordSessionRefusal).
func (r *Runner) AttachSession(ctx context.Context, id, principal, role string, bind contexts.Binding, idle time.Duration) (*Session, error) {
	row, err := r.db.GetSession(ctx, id)
	switch {
	case errors.Is(err, contexts.ErrNotFound):
		return nil, violation.Wrap(violation.SessionUnknown, ErrSessionUnknown, "no session with this id was issued by this server")
	case err != nil:
		return nil, violation.Wrap(violation.Unavailable, err, "the session store cannot be read")
	case row.Principal != principal:
		// Holding someone's session id must grant nothing, and the answer
		// must not tell the holder that the id is live.
		return nil, violation.Wrap(violation.SessionForeign, ErrSessionForeign, "no session with this id was issued by this server")
	}
	now := r.now().UTC()
	if !row.Open(now, idle) {
		return nil, violation.Wrap(violation.SessionExpired, ErrSessionExpired, "this session is closed or was idle too long; initialize a new one")
	}
	if row.ContextID != contexts.DefaultID(principal, role) || !bind.IsZero() { // another role's, or bound elsewhere?
		if _, err := r.admitContext(ctx, row.ContextID, principal, role, bind); err != nil {
			return nil, err
		}
	}
	if now.Sub(row.LastSeen) >= contexts.TouchInterval(idle) {
		if err := r.db.TouchSession(ctx, id, now); err != nil && !errors.Is(err, contexts.ErrNotFound) {
			r.log.Warn("touching session", "err", err)
		}
	}
	return &Session{r: r, id: row.ID, contextID: row.ContextID, principal: principal, role: role,
		transport: row.Transport, elicitation: row.Elicitation}, nil
}

// Sessionless returns a handle for one request made without a transport
// session (protocol 2026-07-28): the principal's default context, or the
// child a context handle names, as the credential's binding allows.
func (r *Runner) Sessionless(ctx context.Context, principal, role, transport, handle string, bind contexts.Binding) (*Session, error) {
	cx, err := r.resolveContext(ctx, principal, role, handle, bind)
	if err != nil {
		return nil, err
	}
	return &Session{r: r, id: sessionless, contextID: cx.ID, principal: principal, role: role, transport: transport}, nil
}

// CloseSession ends a transport session (its context lives on) and
// records it with the context's usage so far.
func (r *Runner) CloseSession(ctx context.Context, id, reason string) {
	was, err := r.db.CloseSession(context.WithoutCancel(ctx), id, reason, r.now().UTC())
	if err != nil || !was {
		if err != nil {
			r.log.Error("closing session", "session", id, "err", err)
		}
		return
	}
	row, err := r.db.GetSession(ctx, id)
	if err != nil {
		return
	}
	r.auditSessionEnd(ctx, row, func(at time.Time, a audit.Actor, usage any) *audit.Record {
		return audit.SessionClose(at, a, reason, usage)
	})
}

// auditSessionEnd writes the record end builds of session row's end, with
// its context's usage as this process knows it (nil: none).
func (r *Runner) auditSessionEnd(ctx context.Context, row *contexts.Session, end func(time.Time, audit.Actor, any) *audit.Record) {
	var usage any
	if u, ok := r.boundUsage(row.ContextID); ok {
		usage = u
	}
	a := audit.Actor{SessionID: row.ID, ContextID: row.ContextID, Principal: row.Principal, Transport: row.Transport}
	if err := r.db.Append(context.WithoutCancel(ctx), end(r.now().UTC(), a, usage)); err != nil {
		r.log.Error("auditing session end", "session", row.ID, "err", err)
	}
}

// closeIdleSessions closes sessions idle past the configured timeout.
func (r *Runner) closeIdleSessions(ctx context.Context) {
	idle := r.Config().Transports.HTTP.SessionIdleTimeout()
	if idle <= 0 {
		return
	}
	now := r.now().UTC()
	rows, err := r.db.CloseIdleSessions(ctx, now.Add(-idle), now, "idle timeout")
	if err != nil {
		r.log.Error("closing idle sessions", "err", err)
		return
	}
	for _, row := range rows {
		r.auditSessionEnd(ctx, row, func(at time.Time, a audit.Actor, usage any) *audit.Record {
			return audit.SessionExpire(at, a, idle, usage)
		})
	}
}

// RecordSessionRefusal audits a request the transport refused because of
// its session (code is one of the SESSION_* or CONTEXT_INVALID codes). The
// presented id is recorded only as a keyed hash: it may be someone else's
// live credential.
func (r *Runner) RecordSessionRefusal(ctx context.Context, transport, principal, role string, code violation.Code, presented, reason string) {
	var presentedHash string
	if presented != "" {
		presentedHash = r.redactor.Hash(presented)
	}
	rec := audit.SessionRefusal(r.now().UTC(), audit.Actor{Principal: principal, Role: role, Transport: transport}, code, presentedHash, reason)
	if err := r.db.Append(context.WithoutCancel(ctx), rec); err != nil {
		r.log.Error("auditing a session refusal", "err", err)
	}
}

// ID is the session's id ("sessionless" for a request without one).
func (s *Session) ID() string { return s.id }

// ContextID is the id of the runtime context the session's calls run in.
func (s *Session) ContextID() string { return s.contextID }

// Principal is who the session belongs to.
func (s *Session) Principal() string { return s.principal }

// Phase is the context's current phase ("" if it cannot be read).
func (s *Session) Phase(ctx context.Context) string {
	chain, err := s.r.contextChain(ctx, s.contextID)
	if err != nil {
		return ""
	}
	return effectivePhase(chain)
}

// WithClient returns a copy of s whose records name the OAuth client the
// current request's access token was issued to. A session handle lives
// longer than one token, so the client is set per request.
func (s *Session) WithClient(clientID string) *Session {
	if clientID == s.clientID {
		return s
	}
	c := *s
	c.clientID = clientID
	return &c
}
