package declarations

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestTransitionTable pins the state machine to the table in doc.go.
func TestTransitionTable(t *testing.T) {
	// Rows: from; columns: to, in the order of States.
	//               decl appr deny exing exed fail expd
	table := map[State]string{
		StateDeclared:  ".  x  x  .  .  .  x",
		StateApproved:  ".  .  .  x  .  .  x",
		StateDenied:    ".  .  .  .  .  .  .",
		StateExecuting: ".  .  .  .  x  x  .",
		StateExecuted:  ".  .  .  .  .  .  .",
		StateFailed:    "x  .  .  .  .  .  .",
		StateExpired:   ".  .  .  .  .  .  .",
	}
	for _, from := range States() {
		row := strings.Fields(table[from])
		for i, to := range States() {
			if want := row[i] == "x"; CanTransition(from, to) != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, !want, want)
			}
		}
	}
	for _, s := range append(States(), "", "Declared", "unknown") {
		if got, want := s.Valid(), table[s] != ""; got != want {
			t.Errorf("%q.Valid() = %v, want %v", s, got, want)
		}
		if CanTransition(s, s) {
			t.Errorf("%s → %s is a transition", s, s)
		}
	}
}

// op is one Manager operation applied to a declaration in one state.
type op struct {
	name string
	late bool // run with the clock past every deadline
	do   func(m *Manager, id string) (*Declaration, error)
}

var ops = []op{
	{"Approve", false, func(m *Manager, id string) (*Declaration, error) { return m.Approve(ctx, id, "operator:bob", "") }},
	{"Deny", false, func(m *Manager, id string) (*Declaration, error) { return m.Deny(ctx, id, "operator:bob", "no") }},
	{"Begin", false, func(m *Manager, id string) (*Declaration, error) { return m.Begin(ctx, id, "s1") }},
	{"FinishOK", false, func(m *Manager, id string) (*Declaration, error) { return m.Finish(ctx, id, confResult, nil) }},
	{"FinishErr", false, func(m *Manager, id string) (*Declaration, error) {
		return m.Finish(ctx, id, nil, errors.New("boom"))
	}},
	{"Retry", false, func(m *Manager, id string) (*Declaration, error) { return m.Retry(ctx, id, "s1") }},
	{"Expire", true, func(m *Manager, id string) (*Declaration, error) {
		n, err := m.Expire(ctx)
		if err == nil && n == 0 {
			err = errNothingExpired
		}
		return nil, err
	}},
	{"LateApprove", true, func(m *Manager, id string) (*Declaration, error) { return m.Approve(ctx, id, "operator:bob", "") }},
	{"LateBegin", true, func(m *Manager, id string) (*Declaration, error) { return m.Begin(ctx, id, "s1") }},
}

var (
	ctx               = context.Background()
	errNothingExpired = errors.New("nothing expired")
)

// TestEveryTransition applies every operation to a declaration in every
// state: each either makes the move the table says or fails with the
// error below and changes nothing. Together the moves made cover the
// whole state machine.
func TestEveryTransition(t *testing.T) {
	// Cells: the state after the operation, or the error it returns.
	const (
		eSt  = "ErrState"
		eCon = "ErrAlreadyConsumed"
		eExp = "ErrExpired"
		eNo  = "nothing"
	)
	//               Approve    Deny       Begin      FinishOK   FinishErr  Retry      Expire     LateApprove LateBegin
	table := map[State][]string{
		StateDeclared:  {"approved", "denied", eSt, eSt, eSt, eSt, "expired", eExp, eSt},
		StateApproved:  {eSt, eSt, "executing", eSt, eSt, eSt, "expired", eSt, eExp},
		StateDenied:    {eSt, eSt, eSt, eSt, eSt, eSt, eNo, eSt, eSt},
		StateExecuting: {eSt, eSt, eCon, "executed", "failed", eSt, eNo, eSt, eCon},
		StateExecuted:  {eSt, eSt, eCon, eSt, eSt, eSt, eNo, eSt, eCon},
		StateFailed:    {eSt, eSt, eCon, eSt, eSt, "declared", eNo, eSt, eCon},
		StateExpired:   {eExp, eExp, eExp, eSt, eSt, eExp, eNo, eExp, eExp},
	}
	sentinel := map[string]error{eSt: ErrState, eCon: ErrAlreadyConsumed, eExp: ErrExpired, eNo: errNothingExpired}
	moved := map[[2]State]bool{}
	ran := 0
	for _, from := range States() {
		for i, o := range ops {
			want := table[from][i]
			t.Run(fmt.Sprintf("%s/%s", from, o.name), func(t *testing.T) {
				ran++
				st := NewMemoryStore()
				clk := &confClock{t: confEpoch}
				m := NewManager(st, &ManagerOptions{Now: clk.Now})
				d := seed(t, st, from)
				if o.late {
					clk.Advance(24 * time.Hour)
				}
				_, err := o.do(m, d.ID)
				after, gerr := st.Get(ctx, d.ID)
				if gerr != nil {
					t.Fatal(gerr)
				}
				if werr, isErr := sentinel[want]; isErr {
					if !errors.Is(err, werr) {
						t.Fatalf("got %v, want %v", err, werr)
					}
					// Only a lazy expiry may move a declaration on error.
					if after.State != from && !(werr == ErrExpired && after.State == StateExpired) {
						t.Fatalf("failed %s moved the declaration to %s", o.name, after.State)
					}
					return
				}
				if err != nil {
					t.Fatalf("got %v, want a move to %s", err, want)
				}
				if after.State != State(want) {
					t.Fatalf("state %s, want %s", after.State, want)
				}
				last := after.History[len(after.History)-1]
				if last.From != from || last.To != after.State || !last.At.Equal(clk.Now()) || last.By == "" {
					t.Errorf("history entry %+v", last)
				}
				moved[[2]State{from, after.State}] = true
			})
		}
	}
	if ran < len(States())*len(ops) {
		return // a -run pattern selected some cells only
	}
	for from, tos := range transitions {
		for _, to := range tos {
			if !moved[[2]State{from, to}] {
				t.Errorf("no operation made the move %s → %s", from, to)
			}
		}
	}
}

// seed stores a valid declaration of session s1 in state, with one
// attempt used and every deadline an hour ahead.
func seed(t *testing.T, st Store, state State) *Declaration {
	t.Helper()
	n := confNeed()
	d := &Declaration{
		ID: "d-" + string(state), ContextID: "s1", Need: n, Fingerprint: n.Fingerprint(), State: state,
		Decision: DecisionRequireApproval, RuleID: "r", CreatedAt: confEpoch,
		ExpiresAt: confEpoch.Add(time.Hour), Attempts: 1,
		History: []Transition{{To: state, At: confEpoch, By: "test"}},
	}
	if state == StateDeclared || state == StateApproved {
		d.Attempts = 0
	}
	if err := st.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	return d
}
