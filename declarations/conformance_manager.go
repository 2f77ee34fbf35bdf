package declarations

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// confClock is a clock the test moves by hand.
type confClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *confClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *confClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func confNeed() Need {
	return Need{
		Operation:  OpFetch,
		Parameters: Parameters{URL: "https://example.com/prices?product=x"},
		Justification: Justification{
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

func confState(t *testing.T, st Store, id string, want State) *Declaration {
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

var confResult = &ResultRef{ContentSHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", Bytes: 0, AttributionID: "att-1"}

// confManagerLifecycle runs every Manager operation on the store: what
// the Manager promises holds only if the store keeps its side.
func confManagerLifecycle(t *testing.T, st Store) {
	ctx := context.Background()
	clk := &confClock{t: confEpoch}
	m := NewManager(st, &ManagerOptions{Now: clk.Now})

	d, err := m.Declare(ctx, "s1", "alice", confNeed(), DecisionRequireApproval, "rule:fetch", "fetch needs a person")
	confWant(t, "Declare", err, nil)
	n := confNeed()
	if d.State != StateDeclared || d.Fingerprint != n.Fingerprint() || !d.ExpiresAt.Equal(confEpoch.Add(time.Hour)) {
		t.Fatalf("declared: %s", confJSON(d))
	}
	id := d.ID

	_, err = m.Begin(ctx, id, "s1")
	confWant(t, "Begin before approval", err, ErrState)
	clk.Advance(time.Minute)
	d, err = m.Approve(ctx, id, "operator:bob", "looks fine")
	confWant(t, "Approve", err, nil)
	if d.State != StateApproved || d.DecidedBy != "operator:bob" || !d.ExpiresAt.Equal(clk.Now().Add(15*time.Minute)) {
		t.Fatalf("approved: %s", confJSON(d))
	}
	_, err = m.Approve(ctx, id, "operator:bob", "")
	confWant(t, "second Approve", err, ErrState)

	_, err = m.Begin(ctx, id, "s2")
	confWant(t, "Begin from another session", err, ErrWrongContext)
	confState(t, st, id, StateApproved)

	confRaceBegin(t, m, id, "s1")
	_, err = m.Begin(ctx, id, "s1")
	confWant(t, "replayed Begin", err, ErrAlreadyConsumed)

	d, err = m.Finish(ctx, id, nil, errors.New("connection reset"))
	confWant(t, "Finish failed", err, nil)
	if d.State != StateFailed || d.Attempts != 1 || d.Result != nil {
		t.Fatalf("failed: %s", confJSON(d))
	}
	_, err = m.Begin(ctx, id, "s1")
	confWant(t, "Begin after failure", err, ErrAlreadyConsumed)
	_, err = m.Retry(ctx, id, "s2")
	confWant(t, "Retry from another session", err, ErrWrongContext)

	// One retry, with a fresh approval.
	d, err = m.Retry(ctx, id, "s1")
	confWant(t, "Retry", err, nil)
	if d.State != StateDeclared || d.DecidedBy != "" || !d.DecidedAt.IsZero() {
		t.Fatalf("retried: %s", confJSON(d))
	}
	_, err = m.Begin(ctx, id, "s1")
	confWant(t, "Begin after Retry without approval", err, ErrState)
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
	confWant(t, "second Retry", err, ErrNoAttemptsLeft)
	d = confState(t, st, id, StateFailed)

	confHistory(t, d, StateDeclared, StateApproved, StateExecuting, StateFailed,
		StateDeclared, StateApproved, StateExecuting, StateFailed)
}

// confRaceBegin has twenty executors race for one approval: exactly one
// may win.
func confRaceBegin(t *testing.T, m *Manager, id, session string) {
	t.Helper()
	const racers = 20
	errs := make([]error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() { _, errs[i] = m.Begin(context.Background(), id, session) })
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else if !errors.Is(err, ErrAlreadyConsumed) {
			t.Errorf("losing Begin: %v, want ErrAlreadyConsumed", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d concurrent Begins won, want 1", won)
	}
}

// confHistory checks that d went through want, each move from the last.
func confHistory(t *testing.T, d *Declaration, want ...State) {
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
func confManagerPolicy(t *testing.T, st Store) {
	ctx := context.Background()
	m := NewManager(st, &ManagerOptions{Now: (&confClock{t: confEpoch}).Now})

	// Auto-approval by policy, then success.
	d, err := m.Declare(ctx, "s1", "alice", confNeed(), DecisionAllow, "rule:low-risk", "")
	confWant(t, "Declare allowed", err, nil)
	if d.State != StateApproved || d.DecidedBy != "policy:rule:low-risk" {
		t.Fatalf("auto-approved: %s", confJSON(d))
	}
	_, err = m.Begin(ctx, d.ID, "s1")
	confWant(t, "Begin auto-approved", err, nil)
	d, err = m.Finish(ctx, d.ID, confResult, nil)
	confWant(t, "Finish executed", err, nil)
	if d.State != StateExecuted || d.Result == nil || *d.Result != *confResult {
		t.Fatalf("executed: %s", confJSON(d))
	}
	_, err = m.Finish(ctx, d.ID, confResult, nil)
	confWant(t, "second Finish", err, ErrState)
	_, err = m.Retry(ctx, d.ID, "s1")
	confWant(t, "Retry of executed", err, ErrState)

	// Denied by policy: terminal.
	d, err = m.Declare(ctx, "s1", "alice", confNeed(), DecisionDeny, "deny:comm.*", "no fetching")
	confWant(t, "Declare denied", err, nil)
	if d.State != StateDenied || d.DecidedBy != "policy:deny:comm.*" {
		t.Fatalf("denied: %s", confJSON(d))
	}
	_, err = m.Approve(ctx, d.ID, "operator:bob", "")
	confWant(t, "Approve denied", err, ErrState)
	_, err = m.Begin(ctx, d.ID, "s1")
	confWant(t, "Begin denied", err, ErrState)
}

// confManagerExpiry drives the deadlines with a hand-moved clock.
func confManagerExpiry(t *testing.T, st Store) {
	ctx := context.Background()
	clk := &confClock{t: confEpoch}
	m := NewManager(st, &ManagerOptions{Now: clk.Now, ApprovalTTL: 15 * time.Minute, DeclarationTTL: time.Hour})
	declare := func(decision string) string {
		t.Helper()
		d, err := m.Declare(ctx, "s1", "", confNeed(), decision, "r", "")
		confWant(t, "Declare", err, nil)
		return d.ID
	}
	pending := declare(DecisionRequireApproval) // decision due at +60m
	approved := declare(DecisionAllow)          // approval due at +15m
	lazy := declare(DecisionAllow)              // approval due at +15m, used just in time

	clk.Advance(15*time.Minute - time.Microsecond)
	_, err := m.Begin(ctx, lazy, "s1")
	confWant(t, "Begin just before the deadline", err, nil)

	clk.Advance(time.Microsecond) // +15m: the approval's deadline
	n, err := m.Expire(ctx)
	confWant(t, "Expire at +15m", err, nil)
	if n != 1 {
		t.Fatalf("Expire at +15m moved %d, want 1", n)
	}
	confState(t, st, approved, StateExpired)
	_, err = m.Begin(ctx, approved, "s1")
	confWant(t, "Begin of an expired approval", err, ErrExpired)
	confState(t, st, pending, StateDeclared)

	clk.Advance(35 * time.Minute)            // +50m
	late := declare(DecisionRequireApproval) // decision due at +110m
	clk.Advance(10 * time.Minute)            // +60m
	_, err = m.Approve(ctx, pending, "operator:bob", "")
	confWant(t, "Approve past the decision deadline", err, ErrExpired)
	d := confState(t, st, pending, StateExpired)
	if last := d.History[len(d.History)-1]; last.By != ActorExpiry || last.From != StateDeclared {
		t.Errorf("expiry recorded as %+v", last)
	}

	_, err = m.Approve(ctx, late, "operator:bob", "")
	confWant(t, "Approve in time", err, nil)
	clk.Advance(20 * time.Minute)
	_, err = m.Begin(ctx, late, "s1")
	confWant(t, "Begin of an approval past its TTL, before any sweep", err, ErrExpired)
	confState(t, st, late, StateExpired)
	n, err = m.Expire(ctx)
	if err != nil || n != 0 {
		t.Errorf("Expire with nothing due: %d, %v", n, err)
	}
	confState(t, st, lazy, StateExecuting)
}
