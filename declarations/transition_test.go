package declarations_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/declarations/declarationstest"
)

// TestTransitionTable pins the state machine to the table in doc.go.
func TestTransitionTable(t *testing.T) {
	// Rows: from; columns: to, in the order of States.
	//               decl appr deny exing exed fail expd
	table := map[declarations.State]string{
		declarations.StateDeclared:  ".  x  x  .  .  .  x",
		declarations.StateApproved:  ".  .  .  x  .  .  x",
		declarations.StateDenied:    ".  .  .  .  .  .  .",
		declarations.StateExecuting: ".  .  .  .  x  x  .",
		declarations.StateExecuted:  ".  .  .  .  .  .  .",
		declarations.StateFailed:    "x  .  .  .  .  .  .",
		declarations.StateExpired:   ".  .  .  .  .  .  .",
	}
	for _, from := range declarations.States() {
		row := strings.Fields(table[from])
		for i, to := range declarations.States() {
			if want := row[i] == "x"; declarations.CanTransition(from, to) != want {
				t.Errorf("CanTransition(%s, %s) = %v, want %v", from, to, !want, want)
			}
		}
	}
	for _, s := range append(declarations.States(), "", "Declared", "unknown") {
		if got, want := s.Valid(), table[s] != ""; got != want {
			t.Errorf("%q.Valid() = %v, want %v", s, got, want)
		}
		if declarations.CanTransition(s, s) {
			t.Errorf("%s → %s is a transition", s, s)
		}
	}
}

// op is one Manager operation applied to a declaration in one state.
type op struct {
	name string
	late bool // run with the clock past every deadline
	do   func(m *declarations.Manager, id string) (*declarations.Declaration, error)
}

var ops = []op{
	{"Approve", false, func(m *declarations.Manager, id string) (*declarations.Declaration, error) {
		return m.Approve(ctx, id, "operator:bob", "")
	}},
	{"Deny", false, func(m *declarations.Manager, id string) (*declarations.Declaration, error) {
		return m.Deny(ctx, id, "operator:bob", "no")
	}},
	{"Begin", false, func(m *declarations.Manager, id string) (*declarations.Declaration, error) {
		return m.Begin(ctx, id, "s1")
	}},
	{"FinishOK", false, func(m *declarations.Manager, id string) (*declarations.Declaration, error) {
		return m.Finish(ctx, id, declarationstest.Result, nil)
	}},
	{"FinishErr", false, func(m *declarations.Manager, id string) (*declarations.Declaration, error) {
		return m.Finish(ctx, id, nil, errors.New("boom"))
	}},
	{"Retry", false, func(m *declarations.Manager, id string) (*declarations.Declaration, error) {
		return m.Retry(ctx, id, "s1")
	}},
	{"Expire", true, func(m *declarations.Manager, id string) (*declarations.Declaration, error) {
		n, err := m.Expire(ctx)
		if err == nil && n == 0 {
			err = errNothingExpired
		}
		return nil, err
	}},
	{"LateApprove", true, func(m *declarations.Manager, id string) (*declarations.Declaration, error) {
		return m.Approve(ctx, id, "operator:bob", "")
	}},
	{"LateBegin", true, func(m *declarations.Manager, id string) (*declarations.Declaration, error) {
		return m.Begin(ctx, id, "s1")
	}},
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
	table := map[declarations.State][]string{
		declarations.StateDeclared:  {"approved", "denied", eSt, eSt, eSt, eSt, "expired", eExp, eSt},
		declarations.StateApproved:  {eSt, eSt, "executing", eSt, eSt, eSt, "expired", eSt, eExp},
		declarations.StateDenied:    {eSt, eSt, eSt, eSt, eSt, eSt, eNo, eSt, eSt},
		declarations.StateExecuting: {eSt, eSt, eCon, "executed", "failed", eSt, eNo, eSt, eCon},
		declarations.StateExecuted:  {eSt, eSt, eCon, eSt, eSt, eSt, eNo, eSt, eCon},
		declarations.StateFailed:    {eSt, eSt, eCon, eSt, eSt, "declared", eNo, eSt, eCon},
		declarations.StateExpired:   {eExp, eExp, eExp, eSt, eSt, eExp, eNo, eExp, eExp},
	}
	sentinel := map[string]error{eSt: declarations.ErrState, eCon: declarations.ErrAlreadyConsumed, eExp: declarations.ErrExpired, eNo: errNothingExpired}
	moved := map[[2]declarations.State]bool{}
	ran := 0
	for _, from := range declarations.States() {
		for i, o := range ops {
			want := table[from][i]
			t.Run(fmt.Sprintf("%s/%s", from, o.name), func(t *testing.T) {
				ran++
				st := declarationstest.NewMemoryStore()
				clk := declarationstest.NewClock(declarationstest.Epoch)
				m := declarations.NewManager(st, &declarations.ManagerOptions{Now: clk.Now})
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
					if after.State != from && !(werr == declarations.ErrExpired && after.State == declarations.StateExpired) {
						t.Fatalf("failed %s moved the declaration to %s", o.name, after.State)
					}
					return
				}
				if err != nil {
					t.Fatalf("got %v, want a move to %s", err, want)
				}
				if after.State != declarations.State(want) {
					t.Fatalf("state %s, want %s", after.State, want)
				}
				last := after.History[len(after.History)-1]
				if last.From != from || last.To != after.State || !last.At.Equal(clk.Now()) || last.By == "" {
					t.Errorf("history entry %+v", last)
				}
				moved[[2]declarations.State{from, after.State}] = true
			})
		}
	}
	if ran < len(declarations.States())*len(ops) {
		return // a -run pattern selected some cells only
	}
	for from, tos := range declarations.Transitions {
		for _, to := range tos {
			if !moved[[2]declarations.State{from, to}] {
				t.Errorf("no operation made the move %s → %s", from, to)
			}
		}
	}
}

// seed stores a valid declaration of session s1 in state, with one
// attempt used and every deadline an hour ahead.
func seed(t *testing.T, st declarations.Store, state declarations.State) *declarations.Declaration {
	t.Helper()
	n := declarationstest.FetchNeed()
	d := &declarations.Declaration{
		ID: "d-" + string(state), ContextID: "s1", Need: n, Fingerprint: n.Fingerprint(), State: state,
		Decision: declarations.DecisionRequireApproval, RuleID: "r", CreatedAt: declarationstest.Epoch,
		ExpiresAt: declarationstest.Epoch.Add(time.Hour), Attempts: 1,
		History: []declarations.Transition{{To: state, At: declarationstest.Epoch, By: "test"}},
	}
	if state == declarations.StateDeclared || state == declarations.StateApproved {
		d.Attempts = 0
	}
	if err := st.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	return d
}
