// Package contexts holds Airlock's runtime contexts: the durable state a
// principal's calls run in. A context has an id, an optional parent (which it
// may only restrict), the principal and role it belongs to, the policy it runs
// under, its phase, its frozen pool binding and the environment values safe
// to expose. Limit usage, declarations, approvals and evidence are keyed to
// it in the store.
//
// A transport session — a stdio process, an Mcp-Session-Id, or nothing at all
// under the sessionless 2026-07-28 protocol — is only a [Session]: a handle
// onto a context, bound to the principal that opened it. Reconnecting, ending
// a session or restarting the server changes nothing a context holds, and a
// second Airlock process on the same store serves the same contexts.
//
// The package holds types, the [Store] contract every backend implements
// (SQLite and PostgreSQL), and the rules a child context must keep
// ([CheckRestricts]). It does no I/O of its own. The contract's conformance
// suite is test code and lives in contextstest, which the binary never links.
package contexts

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"time"
)

// Phases a context can be in. The phase is server-owned: only an operator
// moves a context between them.
const (
	PhasePlanning  = "planning"
	PhaseExecution = "execution"
)

// Context is one runtime context.
type Context struct {
	ID string `json:"id"`
	// Parent is the context this one restricts; empty for a principal's
	// default context.
	Parent    string `json:"parent,omitempty"`
	Principal string `json:"principal"`
	Role      string `json:"role"`
	// Policy is the name of the policy in force; PolicyVersion is the
	// version it had when the context was created or last rebound.
	Policy        string   `json:"policy"`
	PolicyVersion string   `json:"policy_version"`
	Phase         string   `json:"phase"`
	Pools         []string `json:"pools"`
	// Env holds values that are safe to show the agent (never secrets).
	Env       map[string]string `json:"env,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
	CreatedBy string            `json:"created_by"`
	UpdatedAt time.Time         `json:"updated_at"`
}

// IsDefault reports whether c is its principal's default context.
func (c *Context) IsDefault() bool { return c.Parent == "" }

// Clone returns a deep copy.
func (c *Context) Clone() *Context {
	if c == nil {
		return nil
	}
	out := *c
	out.Pools = append([]string(nil), c.Pools...)
	if c.Env != nil {
		out.Env = make(map[string]string, len(c.Env))
		for k, v := range c.Env {
			out.Env[k] = v
		}
	}
	return &out
}

// DefaultID is the id of the default context principal has in role. It is
// derived from both so that two processes creating it at once agree on one
// row, and so that one principal holding two roles (an OAuth subject that
// two role_mapping rules map differently) has two default contexts: a phase
// an operator set, or usage spent, under one role never carries over to the
// other (issue 26 item 11; server TestOneSubjectTwoRoles).
func DefaultID(principal, role string) string {
	// Another prefix than LegacyDefaultID's, and the principal's length
	// before it: no (principal, role) pair shares an id with another pair
	// or with a legacy id, whatever bytes the names hold.
	return derivedID("airlock default context by role\x00" + strconv.Itoa(len(principal)) + ":" + principal + "\x00" + role)
}

// LoadDefault returns principal's default context of role as st holds it,
// and its id: the one [DefaultID] names, or, if that is not stored, a
// [LegacyDefaultID] context of the same role. ErrNotFound (with DefaultID's
// id, to create it under) when neither is.
func LoadDefault(ctx context.Context, st interface {
	GetContext(context.Context, string) (*Context, error)
}, principal, role string) (*Context, string, error) {
	id := DefaultID(principal, role)
	cx, err := st.GetContext(ctx, id)
	if errors.Is(err, ErrNotFound) {
		if old, lerr := st.GetContext(ctx, LegacyDefaultID(principal)); lerr == nil && old.Role == role {
			return old, old.ID, nil
		}
	}
	return cx, id, err
}

// LegacyDefaultID is the id a principal's default context had before
// default contexts were keyed by role as well. The runner keeps serving
// such a context to the role it belongs to, so an upgrade loses no phase,
// usage or declaration; any other role gets its own [DefaultID].
func LegacyDefaultID(principal string) string {
	return derivedID("airlock default context\x00" + principal)
}

func derivedID(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	return "ctx_" + hex.EncodeToString(sum[:12])
}

// Session is a transport's handle onto a context.
type Session struct {
	ID        string `json:"id"`
	ContextID string `json:"context_id"`
	Principal string `json:"principal"`
	Transport string `json:"transport"`
	// Elicitation records whether the client declared the elicitation
	// capability when it opened the session.
	Elicitation bool      `json:"elicitation"`
	CreatedAt   time.Time `json:"created_at"`
	LastSeen    time.Time `json:"last_seen"`
	// ClosedAt is zero while the session is open.
	ClosedAt    time.Time `json:"closed_at,omitzero"`
	CloseReason string    `json:"close_reason,omitempty"`
}

// Open reports whether the session is open and was seen within idle of now
// (idle <= 0: no idle timeout).
func (s *Session) Open(now time.Time, idle time.Duration) bool {
	if !s.ClosedAt.IsZero() {
		return false
	}
	return idle <= 0 || now.Sub(s.LastSeen) < idle
}

// touchEvery bounds how often a session's last-seen time is written: the
// idle timeout is minutes, so a few seconds of slack costs nothing and
// spares a write on most calls.
const touchEvery = 5 * time.Second

// TouchInterval is how stale a session's LastSeen may get before a request
// on it writes it again: touchEvery, or a quarter of idle when the idle
// timeout is so short that a session in steady use would time out between
// writes. It is also how finely the session cap tells recent use apart.
func TouchInterval(idle time.Duration) time.Duration {
	if idle > 0 && idle/4 < touchEvery {
		return idle / 4
	}
	return touchEvery
}

// Errors a Store returns; test with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	// ErrReplayed: a single-use value (an approval challenge) was used before.
	ErrReplayed = errors.New("already used")
	// ErrWidens: a child context would grant more than its parent.
	ErrWidens = errors.New("child context widens its parent")
	// ErrInvalid: a value no context may hold.
	ErrInvalid = errors.New("invalid context")
)

// Store keeps contexts, sessions, limit usage and used challenges.
//
// Concurrency contract: every method is atomic and safe for concurrent use,
// also across processes sharing one database. Values passed in and returned
// are never retained or shared. contextstest.StoreConformance checks all of
// this; every implementation must pass it.
type Store interface {
	// EnsureContext stores c unless a context with c.ID exists, and returns
	// the stored one (c itself, or the existing row unchanged). Two callers
	// racing on one id both get the single stored row.
	EnsureContext(ctx context.Context, c *Context) (*Context, error)
	// CreateContext stores a new context; an id already stored is ErrExists.
	CreateContext(ctx context.Context, c *Context) error
	// GetContext returns the context, or ErrNotFound.
	GetContext(ctx context.Context, id string) (*Context, error)
	// UpdateContext atomically loads the context (ErrNotFound), calls mutate
	// on a copy and stores the copy unless mutate returns an error, which is
	// returned unchanged with nothing stored. ID is kept. mutate must be
	// quick, must not call the Store, and may run more than once.
	UpdateContext(ctx context.Context, id string, mutate func(*Context) error) (*Context, error)
	// ListContexts returns the contexts of principal (every principal's
	// when empty), oldest first.
	ListContexts(ctx context.Context, principal string) ([]*Context, error)

	// OpenSession stores a new session. When maxOpen > 0 and the principal
	// already holds maxOpen or more live sessions over s.Transport (not
	// closed, and seen within idle of s.CreatedAt when idle > 0), it first
	// closes the least recently used of them (LastSeen, then CreatedAt, then
	// ID), as many as make room for s, at s.CreatedAt with reason
	// [EvictReason], and returns them as closed. The count, the closes and
	// the insert are one atomic step: a principal never holds more than
	// maxOpen, and a client that never closes its sessions is never locked
	// out (issue 26 item 3). An id already stored is ErrExists, and then
	// nothing is closed.
	OpenSession(ctx context.Context, s *Session, maxOpen int, idle time.Duration) (evicted []*Session, err error)
	// GetSession returns the session (open or not), or ErrNotFound.
	GetSession(ctx context.Context, id string) (*Session, error)
	// TouchSession sets LastSeen of an open session; a closed or missing
	// session is ErrNotFound.
	TouchSession(ctx context.Context, id string, now time.Time) error
	// CloseSession closes an open session and reports whether it was open.
	CloseSession(ctx context.Context, id, reason string, now time.Time) (bool, error)
	// CloseIdleSessions closes every open session last seen before
	// idleBefore and returns them as closed.
	CloseIdleSessions(ctx context.Context, idleBefore, now time.Time, reason string) ([]*Session, error)
	// ListSessions returns the sessions of a context (every context's when
	// empty); openOnly leaves out closed ones. Oldest first.
	ListSessions(ctx context.Context, contextID string, openOnly bool) ([]*Session, error)

	// UpdateUsage atomically reads the usage values stored under keys
	// (missing keys are absent from the map fn gets), calls fn, and stores
	// every value fn returns, unless fn returns an error: then nothing is
	// stored and the error is returned unchanged. fn must be quick, must
	// not call the Store, and may run more than once.
	UpdateUsage(ctx context.Context, keys []string, fn func(map[string][]byte) (map[string][]byte, error)) error
	// Usage returns the value stored under key, or nil.
	Usage(ctx context.Context, key string) ([]byte, error)

	// UseChallenge records that the single-use challenge nonce has been
	// used; a nonce used before is ErrReplayed. expires says when the record
	// may be forgotten (the challenge is refused as expired after it anyway).
	UseChallenge(ctx context.Context, nonce string, expires time.Time) error
}

// EvictReason is the close reason of a session OpenSession closed to make
// room under the cap.
const EvictReason = "evicted: least recently used at max_sessions_per_principal"

// ValidPhase reports whether p is planning or execution.
func ValidPhase(p string) bool { return p == PhasePlanning || p == PhaseExecution }
