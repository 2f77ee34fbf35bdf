package declarations_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/declarations/declarationstest"
)

func newTestManager(opts *declarations.ManagerOptions) (*declarations.Manager, *declarationstest.MemoryStore, *declarationstest.Clock) {
	st := declarationstest.NewMemoryStore()
	clk := declarationstest.NewClock(declarationstest.Epoch)
	var o declarations.ManagerOptions
	if opts != nil {
		o = *opts
	}
	o.Now = clk.Now
	return declarations.NewManager(st, &o), st, clk
}

func declareApproved(t *testing.T, m *declarations.Manager, session string) *declarations.Declaration {
	t.Helper()
	d, err := m.Declare(ctx, session, "alice", declarationstest.FetchNeed(), declarations.DecisionAllow, "allow:comm.fetch", "low risk")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDeclareDefaults(t *testing.T) {
	m, _, _ := newTestManager(nil)
	d, err := m.Declare(ctx, "s1", "alice", declarationstest.FetchNeed(), declarations.DecisionRequireApproval, "r1", "")
	if err != nil {
		t.Fatal(err)
	}
	if !d.ExpiresAt.Equal(declarationstest.Epoch.Add(time.Hour)) || d.Attempts != 0 || d.DecidedBy != "" || len(d.History) != 1 {
		t.Errorf("declared: %s", declarationstest.JSON(d))
	}
	if h := d.History[0]; h.From != "" || h.To != declarations.StateDeclared || h.By != "agent:alice" {
		t.Errorf("first history entry %+v", h)
	}
	d = declareApproved(t, m, "s1")
	if !d.ExpiresAt.Equal(declarationstest.Epoch.Add(15*time.Minute)) || !d.DecidedAt.Equal(declarationstest.Epoch) || len(d.History) != 2 {
		t.Errorf("auto-approved: %s", declarationstest.JSON(d))
	}
	d, err = m.Declare(ctx, "s1", "", declarationstest.FetchNeed(), declarations.DecisionDeny, "default", "nothing allows comm.fetch")
	if err != nil || d.History[0].By != "agent" || d.DecidedBy != "policy:default" {
		t.Errorf("denied without principal: %v %s", err, declarationstest.JSON(d))
	}
	// Times are UTC to the microsecond, whatever the clock gives.
	m2 := declarations.NewManager(declarationstest.NewMemoryStore(), &declarations.ManagerOptions{Now: func() time.Time {
		return time.Date(2026, 1, 1, 12, 0, 0, 123456789, time.FixedZone("X", 3600))
	}})
	d, _ = m2.Declare(ctx, "s1", "", declarationstest.FetchNeed(), declarations.DecisionRequireApproval, "r", "")
	if d.CreatedAt.Location() != time.UTC || d.CreatedAt.Nanosecond() != 123456000 {
		t.Errorf("CreatedAt %v", d.CreatedAt)
	}
}

func TestDeclareInvalid(t *testing.T) {
	m, st, _ := newTestManager(nil)
	bad := declarationstest.FetchNeed()
	bad.Justification.ExpectedUse = ""
	for _, c := range []struct {
		name, session, principal, decision, rule, reason string
		need                                             declarations.Need
		field                                            string
	}{
		{"need", "s1", "p", declarations.DecisionAllow, "r", "", bad, "justification.expected_use"},
		{"no session", "", "p", declarations.DecisionAllow, "r", "", declarationstest.FetchNeed(), "context_id"},
		{"session newline", "s\n1", "p", declarations.DecisionAllow, "r", "", declarationstest.FetchNeed(), "context_id"},
		{"principal control", "s1", "p\x1b", declarations.DecisionAllow, "r", "", declarationstest.FetchNeed(), "principal"},
		{"unknown decision", "s1", "p", "maybe", "r", "", declarationstest.FetchNeed(), "decision"},
		{"empty decision", "s1", "p", "", "r", "", declarationstest.FetchNeed(), "decision"},
		{"no rule", "s1", "p", declarations.DecisionDeny, "", "", declarationstest.FetchNeed(), "rule_id"},
		{"rule too long", "s1", "p", declarations.DecisionDeny, strings.Repeat("r", 257), "", declarationstest.FetchNeed(), "rule_id"},
		{"reason bidi", "s1", "p", declarations.DecisionDeny, "r", "a\u202eb", declarationstest.FetchNeed(), "reason"},
	} {
		_, err := m.Declare(ctx, c.session, c.principal, c.need, c.decision, c.rule, c.reason)
		var fe *declarations.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, declarations.ErrInvalid) {
			t.Errorf("%s: %v, want a FieldError for %s", c.name, err, c.field)
		}
	}
	if all, _ := st.List(ctx, declarations.Filter{}); len(all) != 0 {
		t.Errorf("invalid declarations were stored: %d", len(all))
	}
}

func TestDecideActors(t *testing.T) {
	m, _, _ := newTestManager(nil)
	for _, by := range []string{"", "bob", "operator:", "root:bob", "operator:bo\nb", "operator:\u202ebob", "Operator:bob",
		"operator:" + strings.Repeat("b", 300)} {
		d, _ := m.Declare(ctx, "s1", "", declarationstest.FetchNeed(), declarations.DecisionRequireApproval, "r", "")
		if _, err := m.Approve(ctx, d.ID, by, ""); !errors.Is(err, declarations.ErrInvalid) {
			t.Errorf("Approve by %q: %v, want ErrInvalid", by, err)
		}
		if _, err := m.Deny(ctx, d.ID, by, ""); !errors.Is(err, declarations.ErrInvalid) {
			t.Errorf("Deny by %q: %v, want ErrInvalid", by, err)
		}
	}
	for _, by := range []string{"policy:rule-1", "elicitation:claude-desktop 1.2", "operator:bob@example.com"} {
		d, _ := m.Declare(ctx, "s1", "", declarationstest.FetchNeed(), declarations.DecisionRequireApproval, "r", "")
		got, err := m.Approve(ctx, d.ID, by, "fine\nby me")
		if err != nil || got.DecidedBy != by || got.History[1].Reason != "fine\nby me" {
			t.Errorf("Approve by %q: %v %s", by, err, declarationstest.JSON(got))
		}
	}
	d, _ := m.Declare(ctx, "s1", "", declarationstest.FetchNeed(), declarations.DecisionRequireApproval, "r", "")
	if _, err := m.Deny(ctx, d.ID, "operator:bob", "bad\x00reason"); !errors.Is(err, declarations.ErrInvalid) {
		t.Errorf("Deny with a NUL in the reason: %v", err)
	}
}

func TestNotFound(t *testing.T) {
	m, _, _ := newTestManager(nil)
	for _, id := range []string{"", "missing", "a b", "x\x00", strings.Repeat("x", 1000), "é"} {
		for name, err := range map[string]error{
			"Approve": second(m.Approve(ctx, id, "operator:bob", "")),
			"Deny":    second(m.Deny(ctx, id, "operator:bob", "")),
			"Begin":   second(m.Begin(ctx, id, "s1")),
			"Finish":  second(m.Finish(ctx, id, declarationstest.Result, nil)),
			"Retry":   second(m.Retry(ctx, id, "s1")),
			"Get":     second(m.Get(ctx, id, "s1")),
		} {
			if !errors.Is(err, declarations.ErrNotFound) {
				t.Errorf("%s(%q): %v, want ErrNotFound", name, id, err)
			}
			if len(id) > 3 && strings.Contains(err.Error(), id) && id != "missing" {
				t.Errorf("%s(%q): error repeats a hostile id", name, id)
			}
		}
	}
}

func second[T any](_ T, err error) error { return err }

// TestWrongContext: another session can neither run, retry nor read a
// declaration, and the error names nothing of the owner's session.
func TestWrongContext(t *testing.T) {
	m, st, _ := newTestManager(nil)
	const owner = "session-owner-7f3a"
	d := declareApproved(t, m, owner)
	for _, sess := range []string{"other", "", owner + " ", strings.ToUpper(owner), owner[:len(owner)-1]} {
		for name, err := range map[string]error{
			"Begin": second(m.Begin(ctx, d.ID, sess)),
			"Retry": second(m.Retry(ctx, d.ID, sess)), // wrong state too: the session is checked first
			"Get":   second(m.Get(ctx, d.ID, sess)),
		} {
			if !errors.Is(err, declarations.ErrWrongContext) {
				t.Errorf("%s from %q: %v, want ErrWrongContext", name, sess, err)
			} else if strings.Contains(err.Error(), "owner") || strings.Contains(err.Error(), "7f3a") {
				t.Errorf("%s: error %q names the owner's session", name, err)
			}
		}
	}
	declarationstest.WantState(t, st, d.ID, declarations.StateApproved)
	if got, err := m.Get(ctx, d.ID, owner); err != nil || got.ID != d.ID {
		t.Errorf("Get by the owner: %v", err)
	}
}

// TestBeginConcurrent: of 20 goroutines beginning one approved declaration,
// exactly one wins and the others get ErrAlreadyConsumed, round after round.
func TestBeginConcurrent(t *testing.T) {
	m, st, _ := newTestManager(nil)
	for round := range 25 {
		d := declareApproved(t, m, "s1")
		won := declarationstest.Race(t, 20, declarations.ErrAlreadyConsumed, func() error {
			_, err := m.Begin(ctx, d.ID, "s1")
			return err
		})
		if got := declarationstest.WantState(t, st, d.ID, declarations.StateExecuting); won != 1 || got.Attempts != 1 {
			t.Fatalf("round %d: %d winners, attempts %d", round, won, got.Attempts)
		}
	}
}

// TestReplayRefused: once consumed, an approval is refused however the
// declaration ended, and a retry needs its own approval.
func TestReplayRefused(t *testing.T) {
	m, _, _ := newTestManager(nil)
	d := declareApproved(t, m, "s1")
	if _, err := m.Begin(ctx, d.ID, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Finish(ctx, d.ID, declarationstest.Result, nil); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := m.Begin(ctx, d.ID, "s1"); !errors.Is(err, declarations.ErrAlreadyConsumed) {
			t.Fatalf("replay after success: %v", err)
		}
	}
	if _, err := m.Retry(ctx, d.ID, "s1"); !errors.Is(err, declarations.ErrState) {
		t.Fatalf("Retry after success: %v", err)
	}
}

func TestRetryAttempts(t *testing.T) {
	for _, c := range []struct {
		max, runs int
	}{{0, 2}, {1, 1}, {2, 2}, {3, 3}} {
		m, st, _ := newTestManager(&declarations.ManagerOptions{MaxAttempts: c.max})
		d := declareApproved(t, m, "s1")
		runs := 0
		for {
			if _, err := m.Begin(ctx, d.ID, "s1"); err != nil {
				t.Fatalf("max %d: Begin: %v", c.max, err)
			}
			runs++
			if _, err := m.Finish(ctx, d.ID, nil, errors.New("boom")); err != nil {
				t.Fatal(err)
			}
			_, err := m.Retry(ctx, d.ID, "s1")
			if errors.Is(err, declarations.ErrNoAttemptsLeft) {
				break
			}
			if err != nil {
				t.Fatalf("max %d: Retry: %v", c.max, err)
			}
			if _, err := m.Approve(ctx, d.ID, "operator:bob", "again"); err != nil {
				t.Fatal(err)
			}
		}
		if got := declarationstest.WantState(t, st, d.ID, declarations.StateFailed); runs != c.runs || got.Attempts != c.runs {
			t.Errorf("max %d: %d executions (attempts %d), want %d", c.max, runs, got.Attempts, c.runs)
		}
	}
}

func TestRetryDeadline(t *testing.T) {
	m, _, clk := newTestManager(nil)
	d := declareApproved(t, m, "s1")
	m.Begin(ctx, d.ID, "s1")
	clk.Advance(3 * time.Hour) // long past the original declaration deadline
	m.Finish(ctx, d.ID, nil, errors.New("boom"))
	d, err := m.Retry(ctx, d.ID, "s1")
	if err != nil || !d.ExpiresAt.Equal(clk.Now().Add(time.Hour)) {
		t.Fatalf("Retry: %v, expires %v", err, d.ExpiresAt)
	}
	if n, _ := m.Expire(ctx); n != 0 {
		t.Errorf("a fresh retry was expired")
	}
}

func TestFinishResult(t *testing.T) {
	m, st, _ := newTestManager(nil)
	d := declareApproved(t, m, "s1")
	m.Begin(ctx, d.ID, "s1")
	for _, c := range []struct {
		r     *declarations.ResultRef
		field string
	}{
		{nil, "result"},
		{&declarations.ResultRef{ContentSHA256: "abc"}, "result.content_sha256"},
		{&declarations.ResultRef{ContentSHA256: strings.ToUpper(declarationstest.Result.ContentSHA256)}, "result.content_sha256"},
		{&declarations.ResultRef{ContentSHA256: declarationstest.Result.ContentSHA256, Bytes: -1}, "result.bytes"},
		{&declarations.ResultRef{ContentSHA256: declarationstest.Result.ContentSHA256, AttributionID: "a\nb"}, "result.attribution_id"},
	} {
		_, err := m.Finish(ctx, d.ID, c.r, nil)
		var fe *declarations.FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("Finish(%+v): %v, want a FieldError for %s", c.r, err, c.field)
		}
	}
	declarationstest.WantState(t, st, d.ID, declarations.StateExecuting)
	r := *declarationstest.Result
	got, err := m.Finish(ctx, d.ID, &r, nil)
	r.Bytes = 99 // the caller's value is not kept
	if err != nil || got.Result.Bytes != declarationstest.Result.Bytes {
		t.Fatalf("Finish: %v %s", err, declarationstest.JSON(got))
	}
}

func TestFinishErrorText(t *testing.T) {
	m, _, _ := newTestManager(nil)
	d := declareApproved(t, m, "s1")
	m.Begin(ctx, d.ID, "s1")
	hostile := "dial tcp: \x1b[2J\u202eevil\nforged line\t" + strings.Repeat("é", 400) + "\xff"
	got, err := m.Finish(ctx, d.ID, declarationstest.Result, errors.New(hostile))
	if err != nil {
		t.Fatal(err)
	}
	reason := got.History[len(got.History)-1].Reason
	if got.Result != nil || !strings.HasPrefix(reason, "execution failed: dial tcp: ") {
		t.Errorf("failed with result %v, reason %q", got.Result, reason)
	}
	if !utf8.ValidString(reason) || len(reason) > 600 {
		t.Errorf("reason not cut or not valid: %d bytes", len(reason))
	}
	if i, why := declarations.BadRune(reason); why != "" || strings.ContainsAny(reason, "\n\t") {
		t.Errorf("reason keeps %s at %d: %q", why, i, reason)
	}
}

// TestFingerprintBinding: a stored need changed after approval is not
// executed, and the approval stays unused.
func TestFingerprintBinding(t *testing.T) {
	m, st, _ := newTestManager(nil)
	d := declareApproved(t, m, "s1")
	_, err := st.Transition(ctx, d.ID, []declarations.State{declarations.StateApproved}, declarations.StateApproved, func(x *declarations.Declaration) error {
		x.Need.Parameters.URL = "https://attacker.example/exfil"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Begin(ctx, d.ID, "s1"); !errors.Is(err, declarations.ErrFingerprint) {
		t.Fatalf("Begin of a changed need: %v, want ErrFingerprint", err)
	}
	_, _ = st.Transition(ctx, d.ID, []declarations.State{declarations.StateApproved}, declarations.StateApproved, func(x *declarations.Declaration) error {
		x.Need.Parameters.URL, x.Fingerprint = "not a url", (&declarations.Need{}).Fingerprint()
		return nil
	})
	if _, err := m.Begin(ctx, d.ID, "s1"); !errors.Is(err, declarations.ErrInvalid) {
		t.Fatalf("Begin of an invalid stored need: %v, want ErrInvalid", err)
	}
	declarationstest.WantState(t, st, d.ID, declarations.StateApproved)
}

// brokenStore returns ErrState without the declaration, against its
// contract; the Manager must fail, not panic.
type brokenStore struct{ *declarationstest.MemoryStore }

func (brokenStore) Transition(context.Context, string, []declarations.State, declarations.State, func(*declarations.Declaration) error) (*declarations.Declaration, error) {
	return nil, declarations.ErrState
}

func TestBrokenStoreNoPanic(t *testing.T) {
	m := declarations.NewManager(brokenStore{declarationstest.NewMemoryStore()}, nil)
	for _, err := range []error{
		second(m.Approve(ctx, "x", "operator:bob", "")), second(m.Begin(ctx, "x", "s")),
		second(m.Finish(ctx, "x", declarationstest.Result, nil)), second(m.Retry(ctx, "x", "s")),
	} {
		if err == nil {
			t.Error("no error from a broken store")
		}
	}
}

func TestExpireStoreError(t *testing.T) {
	m := declarations.NewManager(failingList{declarationstest.NewMemoryStore()}, nil)
	if _, err := m.Expire(ctx); !errors.Is(err, errListBroken) {
		t.Errorf("Expire: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	m2, _, clk := newTestManager(nil)
	declareApproved(t, m2, "s1")
	clk.Advance(time.Hour)
	if _, err := m2.Expire(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Expire with a canceled context: %v", err)
	}
}

var errListBroken = errors.New("list broken")

type failingList struct{ *declarationstest.MemoryStore }

func (failingList) List(context.Context, declarations.Filter) ([]*declarations.Declaration, error) {
	return nil, errListBroken
}
