package declarations

import "time"

// State is where a declaration is in its lifecycle (see the package
// documentation for the state machine).
type State string

// The states.
const (
	StateDeclared  State = "declared"  // waiting for a decision
	StateApproved  State = "approved"  // holds an unused approval
	StateDenied    State = "denied"    // terminal
	StateExecuting State = "executing" // the approval has been consumed
	StateExecuted  State = "executed"  // terminal
	StateFailed    State = "failed"    // terminal once no attempts are left
	StateExpired   State = "expired"   // terminal
)

var allStates = []State{StateDeclared, StateApproved, StateDenied, StateExecuting, StateExecuted, StateFailed, StateExpired}

// transitions is the state machine: the states each state may move to.
// The Manager makes no move that is not here (TestTransitionTable).
var transitions = map[State][]State{
	StateDeclared:  {StateApproved, StateDenied, StateExpired},
	StateApproved:  {StateExecuting, StateExpired},
	StateExecuting: {StateExecuted, StateFailed},
	StateFailed:    {StateDeclared}, // Retry, while attempts are left
}

// Valid reports whether s is one of the seven states.
func (s State) Valid() bool {
	for _, v := range allStates {
		if s == v {
			return true
		}
	}
	return false
}

// CanTransition reports whether the state machine has a move from one
// state to another. Whether a failed declaration may still move also
// depends on its attempts; see [Manager.Retry].
func CanTransition(from, to State) bool {
	for _, t := range transitions[from] {
		if t == to {
			return true
		}
	}
	return false
}

// The decisions a policy makes at declare time (policy.Effect values).
const (
	DecisionAllow           = "allow"
	DecisionRequireApproval = "require_approval"
	DecisionDeny            = "deny"
)

// Actors recorded in Transition.By besides the deciders ("policy:<rule>",
// "elicitation:<client>", "operator:<name>"). The agent appears as
// "agent:<principal>" (or "agent" without a principal).
const (
	ActorRunner = "runner" // Begin and Finish
	ActorExpiry = "expiry" // a deadline passed
)

// Declaration is one need in its lifecycle. The Manager owns every field;
// a Store keeps them and must return exactly what it was given (times to
// the microsecond; the Manager writes UTC times truncated to it).
type Declaration struct {
	ID        string `json:"id"`
	ContextID string `json:"context_id"`
	Principal string `json:"principal,omitempty"`
	Need      Need   `json:"need"`
	// Fingerprint is Need.Fingerprint() when declared; an approval covers
	// this fingerprint and nothing else.
	Fingerprint string `json:"fingerprint"`
	State       State  `json:"state"`
	// Decision, RuleID and Reason are the policy's decision at declare
	// time: DecisionAllow, DecisionRequireApproval or DecisionDeny.
	Decision string `json:"decision"`
	RuleID   string `json:"rule_id"`
	Reason   string `json:"reason,omitempty"`
	// DecidedBy is who approved or denied: "policy:<rule>",
	// "elicitation:<client>" or "operator:<name>"; empty while declared.
	DecidedBy string    `json:"decided_by,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	DecidedAt time.Time `json:"decided_at,omitzero"`
	// ExpiresAt is the deadline of the current state: while declared, for
	// a decision; while approved, for the approval to be used. In any
	// other state it is the last deadline and no longer enforced.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// ExecutedAt is when the last execution ended (executed or failed).
	ExecutedAt time.Time `json:"executed_at,omitzero"`
	// Attempts counts executions begun (approvals consumed).
	Attempts int        `json:"attempts"`
	Result   *ResultRef `json:"result,omitempty"`
	// History holds every move, oldest first; the first has From "".
	History []Transition `json:"history"`
}

// Transition is one recorded move of a declaration.
type Transition struct {
	From   State     `json:"from"`
	To     State     `json:"to"`
	At     time.Time `json:"at"`
	By     string    `json:"by"`
	Reason string    `json:"reason,omitempty"`
}

// ResultRef points at what an execution produced, without holding it.
type ResultRef struct {
	ContentSHA256 string `json:"content_sha256"` // lowercase hex
	Bytes         int64  `json:"bytes"`
	AttributionID string `json:"attribution_id,omitempty"`
}

// Clone returns a deep copy of d; Stores use it so that no caller shares
// memory with what is stored.
func (d *Declaration) Clone() *Declaration {
	if d == nil {
		return nil
	}
	c := *d
	if d.Result != nil {
		r := *d.Result
		c.Result = &r
	}
	if d.History != nil {
		c.History = append([]Transition(nil), d.History...)
	}
	return &c
}

func (d *Declaration) record(to State, at time.Time, by, reason string) {
	d.History = append(d.History, Transition{From: d.State, To: to, At: at, By: by, Reason: reason})
	d.State = to
}

func (r *ResultRef) validate() error {
	if r == nil {
		return invalid("result", "required when the execution succeeded")
	}
	if len(r.ContentSHA256) != 64 || !isLowerHex(r.ContentSHA256) {
		return invalid("result.content_sha256", "must be 64 lowercase hex digits")
	}
	if r.Bytes < 0 {
		return invalid("result.bytes", "must not be negative")
	}
	return checkLine("result.attribution_id", r.AttributionID, 128)
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; !('0' <= b && b <= '9' || 'a' <= b && b <= 'f') {
			return false
		}
	}
	return true
}

// checkActor accepts "policy:<x>", "elicitation:<x>" or "operator:<x>"
// with a non-empty single-line <x>.
func checkActor(by string) error {
	const field = "by"
	if by == "" {
		return invalid(field, "required: policy:<rule>, elicitation:<client> or operator:<name>")
	}
	if err := checkLine(field, by, maxActorBytes); err != nil {
		return err
	}
	for _, kind := range []string{"policy:", "elicitation:", "operator:"} {
		if len(by) > len(kind) && by[:len(kind)] == kind {
			return nil
		}
	}
	return invalid(field, "must be policy:<rule>, elicitation:<client> or operator:<name>")
}

// maxNameBytes bounds ids, names and rule ids; maxActorBytes leaves room
// for an actor's kind before a name.
const (
	maxNameBytes  = 256
	maxActorBytes = maxNameBytes + 16
)
