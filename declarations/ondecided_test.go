package declarations_test

import (
	"errors"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/declarations/declarationstest"
)

// TestOnDecidedTimesTheWait (issue 12, approval latency): every need that
// waited for a person is reported once, when it is approved, denied or
// runs out, with the time since it (last) entered declared; the policy's
// own decisions and an approval left unused are not waits for a person.
func TestOnDecidedTimesTheWait(t *testing.T) {
	type seen struct {
		to     declarations.State
		waited time.Duration
	}
	var got []seen
	m, _, clk := newTestManager(&declarations.ManagerOptions{OnDecided: func(_ *declarations.Declaration, to declarations.State, w time.Duration) {
		got = append(got, seen{to, w})
	}})
	declare := func() *declarations.Declaration {
		d, err := m.Declare(ctx, "s1", "alice", declarationstest.FetchNeed(), declarations.DecisionRequireApproval, "r1", "")
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b, c := declare(), declare(), declare()
	clk.Advance(90 * time.Second)
	if _, err := m.Approve(ctx, a.ID, "operator:bob", "ok"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(30 * time.Second)
	if _, err := m.Deny(ctx, b.ID, "operator:bob", "no"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour) // c runs out; a's approval too, which is not a wait for a person
	if _, err := m.Expire(ctx); err != nil {
		t.Fatal(err)
	}
	// A retry is timed from the retry, and a policy re-approval is not reported.
	d := declareApproved(t, m, "s1")
	if _, err := m.Begin(ctx, d.ID, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Finish(ctx, d.ID, nil, errors.New("boom")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * time.Minute)
	if _, err := m.Retry(ctx, d.ID, "s1"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(5 * time.Second)
	if _, err := m.Approve(ctx, d.ID, "operator:bob", "again"); err != nil {
		t.Fatal(err)
	}
	e := declare()
	if _, err := m.Approve(ctx, e.ID, "policy:allow-retry", "by rule"); err != nil {
		t.Fatal(err)
	}
	want := []seen{
		{declarations.StateApproved, 90 * time.Second},
		{declarations.StateDenied, 120 * time.Second},
		{declarations.StateExpired, time.Hour + 120*time.Second},
		{declarations.StateApproved, 5 * time.Second},
	}
	if len(got) != len(want) {
		t.Fatalf("reported %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("report %d: %v, want %v", i, got[i], want[i])
		}
	}
	_ = c
}
