package declarations

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/kit/textcut"
	"github.com/google/uuid"
)

// ManagerOptions configures a Manager. Zero fields take the defaults.
type ManagerOptions struct {
	// ApprovalTTL is how long an approval may wait to be used (15m).
	ApprovalTTL time.Duration
	// DeclarationTTL is how long a declaration may wait for a decision,
	// counted from when it was declared or retried (1h).
	DeclarationTTL time.Duration
	// MaxAttempts is how many executions one declaration may have in all,
	// each with its own approval (2: one retry). 1 means no retry.
	MaxAttempts int
	// Now is the clock (time.Now).
	Now func() time.Time
	// OnDecided, if set, is told of every need that waited for a person
	// and got an answer or ran out: to is approved, denied or expired, and
	// waited is the time since it last entered declared (its declaration
	// or its retry). Decisions the policy makes ("policy:" actors) never
	// waited for anyone and are not reported. It runs after the move is
	// stored, on the caller's goroutine, and must be cheap (a histogram).
	OnDecided func(d *Declaration, to State, waited time.Duration)
}

// Manager is the lifecycle of declarations on top of a Store: it validates
// what comes in, makes only the moves the state machine has, records each
// in the history, and enforces sessions, deadlines and attempts. It is
// safe for concurrent use; every move is one Store.Transition, so two
// Managers on one store are as safe as one.
type Manager struct {
	st          Store
	approvalTTL time.Duration
	declTTL     time.Duration
	maxAttempts int
	clock       func() time.Time
	onDecided   func(*Declaration, State, time.Duration)
}

// NewManager returns a Manager on st. opts may be nil.
func NewManager(st Store, opts *ManagerOptions) *Manager {
	if st == nil {
		panic("declarations: NewManager with a nil Store")
	}
	var o ManagerOptions
	if opts != nil {
		o = *opts
	}
	m := &Manager{st: st, approvalTTL: o.ApprovalTTL, declTTL: o.DeclarationTTL, maxAttempts: o.MaxAttempts, clock: o.Now, onDecided: o.OnDecided}
	if m.approvalTTL <= 0 {
		m.approvalTTL = 15 * time.Minute
	}
	if m.declTTL <= 0 {
		m.declTTL = time.Hour
	}
	if m.maxAttempts <= 0 {
		m.maxAttempts = 2
	}
	if m.clock == nil {
		m.clock = time.Now
	}
	return m
}

// now is the clock in UTC to the microsecond, which every Store (and
// PostgreSQL) keeps exactly.
func (m *Manager) now() time.Time { return m.clock().UTC().Truncate(time.Microsecond) }

// errDue is returned by a mutate function that found the deadline passed;
// the caller then expires the declaration in a Transition of its own.
var errDue = errors.New("deadline passed")

// Declare validates need, puts it in normal form ([Need.Normalize]) and
// records it with the policy's decision:
// DecisionRequireApproval leaves it declared, waiting for Approve or Deny;
// DecisionAllow approves it at once (auto-approval for low risk) and
// DecisionDeny denies it, each by "policy:<ruleID>". ruleID is required:
// every decision names the rule that made it.
func (m *Manager) Declare(ctx context.Context, contextID, principal string, need Need, decision, ruleID, reason string) (*Declaration, error) {
	d, err := m.newDeclaration(contextID, principal, need, decision, ruleID, reason)
	if err != nil {
		return nil, err
	}
	if err := m.st.Create(ctx, d); err != nil {
		return nil, fmt.Errorf("storing declaration: %w", err)
	}
	return d, nil
}

// newDeclaration is Declare up to the Store: the need validated and in
// normal form, the decision recorded, nothing stored.
func (m *Manager) newDeclaration(contextID, principal string, need Need, decision, ruleID, reason string) (*Declaration, error) {
	if err := need.Validate(); err != nil {
		return nil, err
	}
	if err := need.Normalize(); err != nil {
		return nil, err
	}
	if contextID == "" {
		return nil, invalid("context_id", "required")
	}
	err := errors.Join(
		checkLine("context_id", contextID, maxNameBytes),
		checkLine("principal", principal, maxNameBytes),
		checkDecision(decision),
		checkLine("rule_id", ruleID, maxNameBytes),
		checkOptionalText("reason", reason, MaxJustificationBytes),
	)
	if err != nil {
		return nil, firstField(err)
	}
	if ruleID == "" {
		return nil, invalid("rule_id", "required: the rule that decided")
	}
	now := m.now()
	agent := "agent"
	if principal != "" {
		agent += ":" + principal
	}
	d := &Declaration{
		ID: uuid.NewString(), ContextID: contextID, Principal: principal,
		Need: need, Fingerprint: need.Fingerprint(),
		Decision: decision, RuleID: ruleID, Reason: reason,
		CreatedAt: now, ExpiresAt: now.Add(m.declTTL),
	}
	d.record(StateDeclared, now, agent, "")
	switch by := "policy:" + ruleID; decision {
	case DecisionAllow:
		d.record(StateApproved, now, by, reason)
		d.DecidedBy, d.DecidedAt, d.ExpiresAt = by, now, now.Add(m.approvalTTL)
	case DecisionDeny:
		d.record(StateDenied, now, by, reason)
		d.DecidedBy, d.DecidedAt = by, now
	}
	return d, nil
}

func checkDecision(decision string) error {
	switch decision {
	case DecisionAllow, DecisionRequireApproval, DecisionDeny:
		return nil
	}
	return invalid("decision", "must be allow, require_approval or deny")
}

// Approve moves a declared need to approved, by "policy:<rule>",
// "elicitation:<client>" or "operator:<name>". The approval is good for
// ApprovalTTL and for one execution. A declaration past its deadline is
// expired instead (ErrExpired).
func (m *Manager) Approve(ctx context.Context, id, by, reason string) (*Declaration, error) {
	return m.decide(ctx, id, by, reason, StateApproved)
}

// Deny moves a declared need to denied; otherwise as Approve.
func (m *Manager) Deny(ctx context.Context, id, by, reason string) (*Declaration, error) {
	return m.decide(ctx, id, by, reason, StateDenied)
}

func (m *Manager) decide(ctx context.Context, id, by, reason string, to State) (*Declaration, error) {
	if err := errors.Join(checkActor(by), checkOptionalText("reason", reason, MaxJustificationBytes)); err != nil {
		return nil, firstField(err)
	}
	now := m.now()
	d, err := m.move(ctx, id, StateDeclared, to, func(d *Declaration) error {
		if !now.Before(d.ExpiresAt) {
			return errDue
		}
		d.DecidedBy, d.DecidedAt = by, now
		if to == StateApproved {
			d.ExpiresAt = now.Add(m.approvalTTL)
		}
		d.record(to, now, by, reason)
		return nil
	})
	switch {
	case err == nil:
		if !strings.HasPrefix(by, "policy:") {
			m.decided(d, to, now)
		}
		return d, nil
	case errors.Is(err, errDue):
		return nil, m.expired(ctx, id, StateDeclared, now)
	case errors.Is(err, ErrState) && d.State == StateExpired:
		return nil, fmt.Errorf("declaration %s: %w", id, ErrExpired)
	case errors.Is(err, ErrState):
		return nil, fmt.Errorf("declaration %s is %s, not declared: %w", id, d.State, ErrState)
	}
	return nil, err
}

// Begin consumes the approval of declaration id for an execution in
// contextID: approved → executing, in one compare-and-swap, so of any
// number of concurrent callers exactly one gets the declaration and the
// others ErrAlreadyConsumed (TestBeginConcurrent). It refuses another
// session's declaration (ErrWrongContext, before anything else), an
// approval past its deadline (ErrExpired, and the declaration expires),
// and a stored need that no longer matches its fingerprint
// (ErrFingerprint). The caller must execute exactly the returned Need and
// then call Finish.
func (m *Manager) Begin(ctx context.Context, id, contextID string) (*Declaration, error) {
	now := m.now()
	d, err := m.move(ctx, id, StateApproved, StateExecuting, func(d *Declaration) error {
		if !sameContext(d.ContextID, contextID) {
			return fmt.Errorf("declaration %s: %w", id, ErrWrongContext)
		}
		if !now.Before(d.ExpiresAt) {
			return errDue
		}
		if err := d.Need.Validate(); err != nil {
			return fmt.Errorf("declaration %s: stored need: %w", id, err)
		}
		if d.Need.Fingerprint() != d.Fingerprint {
			return fmt.Errorf("declaration %s: %w", id, ErrFingerprint)
		}
		d.Attempts++
		d.record(StateExecuting, now, ActorRunner, "approval consumed")
		return nil
	})
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, errDue):
		return nil, m.expired(ctx, id, StateApproved, now)
	case errors.Is(err, ErrState):
		return nil, m.stateError(d, contextID, "approved")
	}
	return nil, err
}

// Finish ends the execution Begin started: executing → executed with
// result when execErr is nil, executing → failed otherwise (result is
// then ignored, and execErr's text, cut to 512 bytes with control
// characters replaced, is kept in the history for operators). A failed
// declaration may be retried with Retry.
func (m *Manager) Finish(ctx context.Context, id string, result *ResultRef, execErr error) (*Declaration, error) {
	mv, err := m.finishMove(id, result, execErr)
	if err != nil {
		return nil, err
	}
	d, err := m.move(ctx, id, mv.from, mv.to, mv.mutate)
	if errors.Is(err, ErrState) {
		return nil, fmt.Errorf("declaration %s is %s, not executing: %w", id, d.State, ErrState)
	}
	return d, err
}

// finishMove is Finish's move, not yet stored.
func (m *Manager) finishMove(id string, result *ResultRef, execErr error) (*Move, error) {
	to, why := StateExecuted, ""
	if execErr != nil {
		to, why = StateFailed, "execution failed: "+printable(execErr.Error(), 512)
	} else if err := result.validate(); err != nil {
		return nil, err
	}
	now := m.now()
	return &Move{id: id, from: StateExecuting, to: to, mutate: func(d *Declaration) error {
		d.ExecutedAt = now
		if to == StateExecuted {
			r := *result
			d.Result = &r
		}
		d.record(to, now, ActorRunner, why)
		return nil
	}}, nil
}

// Retry moves a failed declaration of contextID back to declared, so that
// it needs a fresh approval (seed 001: an approval is never reused), with
// a new DeclarationTTL deadline. A declaration that has had MaxAttempts
// executions stays failed: ErrNoAttemptsLeft.
func (m *Manager) Retry(ctx context.Context, id, contextID string) (*Declaration, error) {
	now := m.now()
	d, err := m.move(ctx, id, StateFailed, StateDeclared, func(d *Declaration) error {
		if !sameContext(d.ContextID, contextID) {
			return fmt.Errorf("declaration %s: %w", id, ErrWrongContext)
		}
		if d.Attempts >= m.maxAttempts {
			return fmt.Errorf("declaration %s: %d of %d executions used: %w", id, d.Attempts, m.maxAttempts, ErrNoAttemptsLeft)
		}
		d.DecidedBy, d.DecidedAt = "", time.Time{}
		d.ExpiresAt = now.Add(m.declTTL)
		by := "agent"
		if d.Principal != "" {
			by += ":" + d.Principal
		}
		d.record(StateDeclared, now, by, "retry: a fresh approval is needed")
		return nil
	})
	if errors.Is(err, ErrState) {
		return nil, m.stateError(d, contextID, "failed")
	}
	return d, err
}

// Get returns declaration id if it belongs to contextID.
func (m *Manager) Get(ctx context.Context, id, contextID string) (*Declaration, error) {
	if !plausibleID(id) {
		return nil, fmt.Errorf("declaration: %w", ErrNotFound)
	}
	d, err := m.st.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if !sameContext(d.ContextID, contextID) {
		return nil, fmt.Errorf("declaration %s: %w", id, ErrWrongContext)
	}
	return d, nil
}

// Expire moves every declared need past its decision deadline and every
// approval past its ExpiresAt to expired, and returns how many it moved.
// A declaration that moves on concurrently is left alone. Errors of single
// declarations do not stop the sweep; they are joined.
func (m *Manager) Expire(ctx context.Context) (int, error) {
	moved, err := m.ExpireDue(ctx)
	return len(moved), err
}

// ExpireDue is Expire returning the declarations it moved, as they were
// just before (State says whether a decision or an approval ran out).
func (m *Manager) ExpireDue(ctx context.Context) ([]*Declaration, error) {
	now := m.now()
	pending, err := m.st.List(ctx, Filter{States: []State{StateDeclared, StateApproved}})
	if err != nil {
		return nil, fmt.Errorf("listing pending declarations: %w", err)
	}
	var out []*Declaration
	var errs []error
	for _, d := range pending {
		if err := ctx.Err(); err != nil {
			return out, errors.Join(append(errs, err)...)
		}
		if now.Before(d.ExpiresAt) {
			continue
		}
		moved, err := m.expire(ctx, d.ID, d.State, now)
		if moved {
			out = append(out, d)
		}
		if err != nil && !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

var errNotDue = errors.New("deadline not passed")

// expire moves id from state from to expired if its deadline has passed at
// now. It reports whether it moved it; a declaration that moved on in the
// meantime is not an error.
func (m *Manager) expire(ctx context.Context, id string, from State, now time.Time) (bool, error) {
	d, err := m.move(ctx, id, from, StateExpired, func(d *Declaration) error {
		if now.Before(d.ExpiresAt) {
			return errNotDue
		}
		d.record(StateExpired, now, ActorExpiry, expiryReason(from))
		return nil
	})
	switch {
	case err == nil:
		if from == StateDeclared {
			m.decided(d, StateExpired, now)
		}
		return true, nil
	case errors.Is(err, ErrState), errors.Is(err, errNotDue):
		return false, nil
	}
	return false, err
}

func expiryReason(from State) string {
	if from == StateApproved {
		return "approval not used before its deadline"
	}
	return "not decided before its deadline"
}

// expired expires id (see expire) for a caller that found its deadline
// passed, and returns the error that caller gives: ErrExpired, unless the
// store failed.
func (m *Manager) expired(ctx context.Context, id string, from State, now time.Time) error {
	if _, err := m.expire(ctx, id, from, now); err != nil {
		return fmt.Errorf("expiring declaration %s: %w", id, err)
	}
	return fmt.Errorf("declaration %s: %s: %w", id, expiryReason(from), ErrExpired)
}

// decided reports a need that waited for a person and left declared at
// now (ManagerOptions.OnDecided): the wait is counted from its last entry
// into declared, so a retried need is timed from its retry.
func (m *Manager) decided(d *Declaration, to State, now time.Time) {
	if m.onDecided == nil || d == nil {
		return
	}
	m.onDecided(d, to, now.Sub(WaitingSince(d)))
}

// WaitingSince is when d last entered declared (its declaration, or its
// retry): the start of its wait for a decision.
func WaitingSince(d *Declaration) time.Time {
	for i := len(d.History) - 1; i >= 0; i-- {
		if d.History[i].To == StateDeclared {
			return d.History[i].At
		}
	}
	return d.CreatedAt
}

// move is the only caller of Store.Transition: it refuses a move the state
// machine does not have, so no bug in a caller can make one.
func (m *Manager) move(ctx context.Context, id string, from, to State, mutate func(*Declaration) error) (*Declaration, error) {
	if !CanTransition(from, to) {
		panic(fmt.Sprintf("declarations: no transition %s → %s", from, to))
	}
	if !plausibleID(id) {
		return nil, fmt.Errorf("declaration: %w", ErrNotFound)
	}
	d, err := m.st.Transition(ctx, id, []State{from}, to, mutate)
	if errors.Is(err, ErrState) && d == nil {
		// A Store that breaks its contract must not make a caller, which
		// reads the state on ErrState, panic: the error no longer wraps it.
		return nil, fmt.Errorf("declaration %s: store reported a state error without the declaration: %v", id, err)
	}
	return d, err
}

// stateError explains why d (the stored declaration, whose state was not
// the one wanted) cannot be acted on by contextID, naming no other
// session.
func (m *Manager) stateError(d *Declaration, contextID, want string) error {
	switch {
	case !sameContext(d.ContextID, contextID):
		return fmt.Errorf("declaration %s: %w", d.ID, ErrWrongContext)
	case d.State == StateExpired:
		return fmt.Errorf("declaration %s: %w", d.ID, ErrExpired)
	case want == "approved" && (d.State == StateExecuting || d.State == StateExecuted || d.State == StateFailed):
		return fmt.Errorf("declaration %s is %s: %w", d.ID, d.State, ErrAlreadyConsumed)
	}
	return fmt.Errorf("declaration %s is %s, not %s: %w", d.ID, d.State, want, ErrState)
}

// sameContext compares in constant time: a session id is a credential.
func sameContext(a, b string) bool {
	return a != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// plausibleID refuses, as not found, an id no Manager could have made,
// before it reaches a Store or an error message.
func plausibleID(id string) bool {
	if id == "" || len(id) > maxNameBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		if b := id[i]; b <= ' ' || b >= 0x7f {
			return false
		}
	}
	return true
}

// printable cuts s to at most limit bytes on a rune boundary and replaces
// control and formatting characters with U+FFFD, for text that came from
// outside (an error message) and goes into the history.
func printable(s string, limit int) string {
	s, _ = textcut.Prefix(s, limit)
	return strings.Map(func(r rune) rune {
		if r == '\t' {
			return ' '
		}
		if _, why := badRune(string(r)); why != "" || r == '\n' {
			return utf8.RuneError
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
}
