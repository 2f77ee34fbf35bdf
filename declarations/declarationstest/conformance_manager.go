package declarationstest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/declarations"
)

// Clock is a clock the test moves by hand: pass its Now as
// [declarations.ManagerOptions.Now].
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a Clock that reads at until it is advanced.
func NewClock(at time.Time) *Clock { return &Clock{t: at} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// FetchNeed returns a valid comm.fetch need.
func FetchNeed() declarations.Need {
	return declarations.Need{
		Operation:  declarations.OpFetch,
		Parameters: declarations.Parameters{URL: "https://example.com/prices?product=x"},
		Justification: declarations.Justification{
			UserRequest:      "What does Product X cost today?",
			MissingKnowledge: "Current prices are not in the bound pools.",
			ExpectedUse:      "Quote the price with its source.",
		},
	}
}

// confWant fails the test unless err wraps want (nil: no error).
func confWant(t *testing.T, what string, err, want error) {
	t.Helper()
	if want == nil && err != nil || want != nil && !errors.Is(err, want) {
		t.Fatalf("%s: %v, want %v", what, err, want)
	}
}

// WantState fails the test unless the stored declaration id is in state
// want, and returns it.
func WantState(t *testing.T, st declarations.Store, id string, want declarations.State) *declarations.Declaration {
	t.Helper()
	d, err := st.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if d.State != want {
		t.Fatalf("declaration is %s, want %s", d.State, want)
	}
	return d
}

// Result is a valid result reference, for Finish.
var Result = &declarations.ResultRef{ContentSHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Bytes: 0, AttributionID: "att-1"}

// confManagerLifecycle runs every Manager operation on the store: what
// the Manager promises holds only if the store keeps its side.
func confManagerLifecycle(t *testing.T, st declarations.Store) {
	ctx := context.Background()
	clk := NewClock(Epoch)
	m := declarations.NewManager(st, &declarations.ManagerOptions{Now: clk.Now})

	d, err := m.Declare(ctx, "s1", "alice", FetchNeed(), declarations.DecisionRequireApproval, "rule:fetch", "fetch needs a person")
	confWant(t, "Declare", err, nil)
	n := FetchNeed()
	if d.State != declarations.StateDeclared || d.Fingerprint != n.Fingerprint() || !d.ExpiresAt.Equal(Epoch.Add(time.Hour)) {
		t.Fatalf("declared: %s", JSON(d))
	}
	id := d.ID

	_, err = m.Begin(ctx, id, "s1")
	confWant(t, "Begin before approval", err, declarations.ErrState)
	clk.Advance(time.Minute)
	d, err = m.Approve(ctx, id, "operator:bob", "looks fine")
	confWant(t, "Approve", err, nil)
	if d.State != declarations.StateApproved || d.DecidedBy != "operator:bob" || !d.ExpiresAt.Equal(clk.Now().Add(15*time.Minute)) {
		t.Fatalf("approved: %s", JSON(d))
	}
	_, err = m.Approve(ctx, id, "operator:bob", "")
	confWant(t, "second Approve", err, declarations.ErrState)

	_, err = m.Begin(ctx, id, "s2")
	confWant(t, "Begin from another session", err, declarations.ErrWrongContext)
	WantState(t, st, id, declarations.StateApproved)

	confRaceBegin(t, m, id, "s1")
	_, err = m.Begin(ctx, id, "s1")
	confWant(t, "replayed Begin", err, declarations.ErrAlreadyConsumed)

	d, err = m.Finish(ctx, id, nil, errors.New("connection reset"))
	confWant(t, "Finish failed", err, nil)
	if d.State != declarations.StateFailed || d.Attempts != 1 || d.Result != nil {
		t.Fatalf("failed: %s", JSON(d))
	}
	_, err = m.Begin(ctx, id, "s1")
	confWant(t, "Begin after failure", err, declarations.ErrAlreadyConsumed)
	_, err = m.Retry(ctx, id, "s2")
	confWant(t, "Retry from another session", err, declarations.ErrWrongContext)

	// One retry, with a fresh approval.
	d, err = m.Retry(ctx, id, "s1")
	confWant(t, "Retry", err, nil)
	if d.State != declarations.StateDeclared || d.DecidedBy != "" || !d.DecidedAt.IsZero() {
		t.Fatalf("retried: %s", JSON(d))
	}
	_, err = m.Begin(ctx, id, "s1")
	confWant(t, "Begin after Retry without approval", err, declarations.ErrState)
	_, err = m.Approve(ctx, id, "elicitation:claude-desktop", "")
	confWant(t, "fresh Approve", err, nil)
	d, err = m.Begin(ctx, id, "s1")
	confWant(t, "second Begin", err, nil)
	if d.Attempts != 2 {
		t.Fatalf("attempts %d, want 2", d.Attempts)
	}
	_, err = m.Finish(ctx, id, nil, errors.New("timeout"))
	confWant(t, "second failure", err, nil)
	_, err = m.Retry(ctx, id, "s1")
	confWant(t, "second Retry", err, declarations.ErrNoAttemptsLeft)
	d = WantState(t, st, id, declarations.StateFailed)

	confHistory(t, d, declarations.StateDeclared, declarations.StateApproved, declarations.StateExecuting, declarations.StateFailed,
		declarations.StateDeclared, declarations.StateApproved, declarations.StateExecuting, declarations.StateFailed)
}

// confRaceBegin has twenty executors race for one approval: exactly one
// may win.
func confRaceBegin(t *testing.T, m *declarations.Manager, id, session string) {
	t.Helper()
	won := Race(t, 20, declarations.ErrAlreadyConsumed, func() error {
		_, err := m.Begin(context.Background(), id, session)
		return err
	})
	if won != 1 {
		t.Fatalf("%d concurrent Begins won, want 1", won)
	}
}

// confHistory checks that d went through want, each move from the last.
func confHistory(t *testing.T, d *declarations.Declaration, want ...declarations.State) {
	t.Helper()
	ok := len(d.History) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = d.History[i].To == want[i] && (i == 0 || d.History[i].From == want[i-1])
	}
	if !ok {
		t.Fatalf("history %+v, want moves through %v", d.History, want)
	}
}

// confManagerPolicy runs the decisions a policy makes at declare time.
func confManagerPolicy(t *testing.T, st declarations.Store) {
	ctx := context.Background()
	m := declarations.NewManager(st, &declarations.ManagerOptions{Now: (NewClock(Epoch)).Now})

	// Auto-approval by policy, then success.
	d, err := m.Declare(ctx, "s1", "alice", FetchNeed(), declarations.DecisionAllow, "rule:low-risk", "")
	confWant(t, "Declare allowed", err, nil)
	if d.State != declarations.StateApproved || d.DecidedBy != "policy:rule:low-risk" {
		t.Fatalf("auto-approved: %s", JSON(d))
	}
	_, err = m.Begin(ctx, d.ID, "s1")
	confWant(t, "Begin auto-approved", err, nil)
	d, err = m.Finish(ctx, d.ID, Result, nil)
	confWant(t, "Finish executed", err, nil)
	if d.State != declarations.StateExecuted || d.Result == nil || *d.Result != *Result {
		t.Fatalf("executed: %s", JSON(d))
	}
	_, err = m.Finish(ctx, d.ID, Result, nil)
	confWant(t, "second Finish", err, declarations.ErrState)
	_, err = m.Retry(ctx, d.ID, "s1")
	confWant(t, "Retry of executed", err, declarations.ErrState)

	// Denied by policy: terminal.
	d, err = m.Declare(ctx, "s1", "alice", FetchNeed(), declarations.DecisionDeny, "deny:comm.*", "no fetching")
	confWant(t, "Declare denied", err, nil)
	if d.State != declarations.StateDenied || d.DecidedBy != "policy:deny:comm.*" {
		t.Fatalf("denied: %s", JSON(d))
	}
	_, err = m.Approve(ctx, d.ID, "operator:bob", "")
	confWant(t, "Approve denied", err, declarations.ErrState)
	_, err = m.Begin(ctx, d.ID, "s1")
	confWant(t, "Begin denied", err, declarations.ErrState)
}

// confManagerExpiry drives the deadlines with a hand-moved clock.
func confManagerExpiry(t *testing.T, st declarations.Store) {
	ctx := context.Background()
	clk := NewClock(Epoch)
	m := declarations.NewManager(st, &declarations.ManagerOptions{Now: clk.Now, ApprovalTTL: 15 * time.Minute, DeclarationTTL: time.Hour})
	declare := func(decision string) string {
		t.Helper()
		d, err := m.Declare(ctx, "s1", "", FetchNeed(), decision, "r", "")
		confWant(t, "Declare", err, nil)
		return d.ID
	}
	pending := declare(declarations.DecisionRequireApproval) // decision due at +60m
	approved := declare(declarations.DecisionAllow)          // approval due at +15m
	lazy := declare(declarations.DecisionAllow)              // approval due at +15m, used just in time

	clk.Advance(15*time.Minute - time.Microsecond)
	_, err := m.Begin(ctx, lazy, "s1")
	confWant(t, "Begin just before the deadline", err, nil)

	clk.Advance(time.Microsecond) // +15m: the approval's deadline
	n, err := m.Expire(ctx)
	confWant(t, "Expire at +15m", err, nil)
	if n != 1 {
		t.Fatalf("Expire at +15m moved %d, want 1", n)
	}
	WantState(t, st, approved, declarations.StateExpired)
	_, err = m.Begin(ctx, approved, "s1")
	confWant(t, "Begin of an expired approval", err, declarations.ErrExpired)
	WantState(t, st, pending, declarations.StateDeclared)

	clk.Advance(35 * time.Minute)                         // +50m
	late := declare(declarations.DecisionRequireApproval) // decision due at +110m
	clk.Advance(10 * time.Minute)                         // +60m
	_, err = m.Approve(ctx, pending, "operator:bob", "")
	confWant(t, "Approve past the decision deadline", err, declarations.ErrExpired)
	d := WantState(t, st, pending, declarations.StateExpired)
	if last := d.History[len(d.History)-1]; last.By != declarations.ActorExpiry || last.From != declarations.StateDeclared {
		t.Errorf("expiry recorded as %+v", last)
	}

	_, err = m.Approve(ctx, late, "operator:bob", "")
	confWant(t, "Approve in time", err, nil)
	clk.Advance(20 * time.Minute)
	_, err = m.Begin(ctx, late, "s1")
	confWant(t, "Begin of an approval past its TTL, before any sweep", err, declarations.ErrExpired)
	WantState(t, st, late, declarations.StateExpired)
	n, err = m.Expire(ctx)
	if err != nil || n != 0 {
		t.Errorf("Expire with nothing due: %d, %v", n, err)
	}
	WantState(t, st, lazy, declarations.StateExecuting)
}
