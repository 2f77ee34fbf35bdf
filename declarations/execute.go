package declarations

import (
	"fmt"
)

// An execution's writes, fewer (issue 23). A policy-approved need that
// runs at once used to be stored five times: the call's started record,
// the declaration created approved, Begin (the approval consumed),
// Finish, and the call's audit record — each a durable commit of its
// own. Two are enough, and they keep what each of the five was for:
//
//   - Before the side effect, one write: [Manager.NewExecuting] makes the
//     need already executing — declared, approved by the policy and its
//     approval consumed, the three moves in its history — and the runner
//     stores it with the call's started record (store.DB.AppendStart),
//     so the execution's
//     intent is durable before anything runs, and a crash leaves it
//     executing: never run a second time (there is no approval left to
//     consume), never unrecorded.
//   - After it, with the call's record: [Manager.FinishLater] makes
//     Finish's move without storing it, and the caller hands the [Move]
//     to a store that writes it in the same transaction as the record
//     (store.DB.AppendCall), so the end of the execution and its audit
//     are durable together, before the answer leaves; a crash before
//     that commit leaves the declaration executing, as a crash during
//     the execution would.

// Move is one lifecycle move the Manager checked and made but did not
// store: only a Manager makes one (its fields are unexported), so a
// store that applies it applies a move the state machine has, with the
// Manager's history entry, and nothing else.
type Move struct {
	id     string
	from   State
	to     State
	mutate func(*Declaration) error
}

// ID is the declaration the move is for.
func (mv *Move) ID() string { return mv.id }

// Apply stores the move through transition, which must be
// [Store.Transition] or behave like it (one compare-and-swap on the
// state; on a transaction of the caller's); what transition returns is
// returned.
func (mv *Move) Apply(transition func(id string, from []State, to State, mutate func(*Declaration) error) (*Declaration, error)) (*Declaration, error) {
	return transition(mv.id, []State{mv.from}, mv.to, mv.mutate)
}

// Preview is d, the declaration as stored before the move, as it will
// be once the move is stored: for an answer built before the commit.
func (mv *Move) Preview(d *Declaration) (*Declaration, error) {
	next := d.Clone()
	if next.State != mv.from {
		return nil, fmt.Errorf("declaration %s is %s, not %s: %w", mv.id, next.State, mv.from, ErrState)
	}
	if err := mv.mutate(next); err != nil {
		return nil, err
	}
	next.ID, next.State = mv.id, mv.to
	return next, nil
}

// NewExecuting is Declare with the policy's allow (ruleID decided)
// followed at once by Begin, without the store: the declaration, checked
// and made executing, its history holding the declaration, the policy's
// approval and its consumption, for the caller to store in one write of
// its own (the call's started record's: store.DB.AppendStart; a Store's
// Create) before it executes. The caller must execute exactly its Need
// and then end the execution (Finish or FinishLater).
func (m *Manager) NewExecuting(contextID, principal string, need Need, ruleID, reason string) (*Declaration, error) {
	d, err := m.newDeclaration(contextID, principal, need, DecisionAllow, ruleID, reason)
	if err != nil {
		return nil, err
	}
	// Begin's move, on the copy not yet stored: the checks Begin makes
	// on a stored declaration (its context, its deadline, its need
	// against its fingerprint) hold by construction here.
	d.Attempts++
	d.record(StateExecuting, d.DecidedAt, ActorRunner, "approval consumed")
	return d, nil
}

// FinishLater is [Manager.Finish] without the store: the move is
// checked and made as Finish would make it, and returned for the caller
// to store with the call's audit record; d (the declaration Begin or
// NewExecuting made) comes back as the move will leave it.
func (m *Manager) FinishLater(d *Declaration, result *ResultRef, execErr error) (*Move, *Declaration, error) {
	mv, err := m.finishMove(d.ID, result, execErr)
	if err != nil {
		return nil, nil, err
	}
	next, err := mv.Preview(d)
	if err != nil {
		return nil, nil, err
	}
	return mv, next, nil
}
