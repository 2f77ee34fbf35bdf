package declarationstest

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/airlock-dev/airlock/declarations"
)

// confManagerExecuting checks the two-write execution (issue 23) against
// the four moves it replaces: NewExecuting, created, stores what Declare with
// the policy's allow and then Begin store (the history, the decision,
// one attempt), and a FinishLater move applied through the Store stores
// what its preview said, once.
func confManagerExecuting(t *testing.T, st declarations.Store) {
	ctx := context.Background()
	m := declarations.NewManager(st, &declarations.ManagerOptions{Now: (NewClock(Epoch)).Now})

	two, err := m.Declare(ctx, "s1", "alice", FetchNeed(), declarations.DecisionAllow, "rule:low-risk", "low risk")
	confWant(t, "Declare allowed", err, nil)
	two, err = m.Begin(ctx, two.ID, "s1")
	confWant(t, "Begin", err, nil)
	one, err := m.NewExecuting("s1", "alice", FetchNeed(), "rule:low-risk", "low risk")
	confWant(t, "NewExecuting", err, nil)
	confWant(t, "Create executing", st.Create(ctx, one), nil)
	stored := WantState(t, st, one.ID, declarations.StateExecuting)
	if !reflect.DeepEqual(stored, one) {
		t.Fatalf("stored %s\nreturned %s", JSON(stored), JSON(one))
	}
	one.ID = two.ID
	if !reflect.DeepEqual(one, two) {
		t.Fatalf("NewExecuting %s\nDeclare + Begin %s", JSON(one), JSON(two))
	}
	// Its approval is consumed: nothing can run it a second time.
	_, err = m.Begin(ctx, stored.ID, "s1")
	confWant(t, "Begin after NewExecuting", err, declarations.ErrAlreadyConsumed)
	_, err = m.NewExecuting("s1", "alice", declarations.Need{}, "rule:low-risk", "")
	confWant(t, "NewExecuting of an invalid need", err, declarations.ErrInvalid)

	mv, preview, err := m.FinishLater(stored, Result, nil)
	confWant(t, "FinishLater", err, nil)
	if preview.State != declarations.StateExecuted || *preview.Result != *Result || mv.ID() != stored.ID {
		t.Fatalf("preview: %s", JSON(preview))
	}
	WantState(t, st, stored.ID, declarations.StateExecuting) // not stored yet
	got, err := mv.Apply(func(id string, from []declarations.State, to declarations.State, mutate func(*declarations.Declaration) error) (*declarations.Declaration, error) {
		return st.Transition(ctx, id, from, to, mutate)
	})
	confWant(t, "Move.Apply", err, nil)
	if !reflect.DeepEqual(got, preview) {
		t.Fatalf("stored %s\npreview %s", JSON(got), JSON(preview))
	}
	_, err = mv.Apply(func(id string, from []declarations.State, to declarations.State, mutate func(*declarations.Declaration) error) (*declarations.Declaration, error) {
		return st.Transition(ctx, id, from, to, mutate)
	})
	confWant(t, "the same move again", err, declarations.ErrState)
	if _, _, err := m.FinishLater(got, Result, nil); !errors.Is(err, declarations.ErrState) {
		t.Fatalf("FinishLater of an executed declaration: %v, want ErrState", err)
	}
	if _, _, err := m.FinishLater(stored, &declarations.ResultRef{ContentSHA256: "not hex"}, nil); !errors.Is(err, declarations.ErrInvalid) {
		t.Fatalf("FinishLater with a malformed result: %v, want ErrInvalid", err)
	}
}
