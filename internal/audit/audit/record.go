package audit

import (
	"encoding/json"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// Record is one audit record: one tool call, or one event of the server
// or an operator, and how it ended. It is built by one of the
// constructors in events.go; the writer (the store, an [Appender]) assigns
// Seq, PrevHash, Hash, Instance, and Time when it is zero. Args must
// already be redacted.
type Record struct {
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"` // UTC, microsecond precision; zero means "now" on Append

	SessionID  string `json:"session_id"`
	ContextID  string `json:"context_id"`
	Principal  string `json:"principal"`
	Role       string `json:"role"`
	Transport  string `json:"transport"`
	Tool       string `json:"tool"`
	Capability string `json:"capability"` // a call's capability, or the event's Kind
	Tier       string `json:"tier"`
	Phase      string `json:"phase"`

	Decision string `json:"decision"`
	RuleID   string `json:"rule_id"`
	Reason   string `json:"reason"`

	// Args are the call's arguments after redaction: empty, or valid JSON,
	// stored and hashed as these exact bytes.
	Args json.RawMessage `json:"args,omitempty"`

	Outcome   Outcome `json:"outcome"`
	Violation string  `json:"violation"`
	ErrorRef  string  `json:"error_ref"`
	Error     string  `json:"error"`

	DurationMicros int64 `json:"duration_micros"`
	OutputBytes    int64 `json:"output_bytes"`
	Truncated      bool  `json:"truncated"`

	// Extra is event-specific detail: empty, or valid JSON, exact bytes.
	Extra json.RawMessage `json:"extra,omitempty"`

	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash"`

	// Instance names the Airlock process that appended the record, so
	// that a chain several instances share says which one wrote what.
	// The writer sets it; empty on records written before instances were
	// recorded (and then the record is encoded as v1, see canonical.go).
	Instance string `json:"instance,omitempty"`
}

// Outcome is how the event a record stands for ended. The set is closed:
// a writer refuses a record whose outcome is not [Outcome.Valid].
type Outcome string

// The outcomes. TestEveryOutcomeIsProduced checks that each is produced
// by a constructor, by [OutcomeOf], or is documented as set elsewhere.
const (
	// OutcomeOK: the call or the action went through.
	OutcomeOK Outcome = "ok"
	// OutcomeDenied: Airlock refused it on purpose (policy, phase, kill
	// switch, limits, a missing approval, an edge or session check).
	OutcomeDenied Outcome = "denied"
	// OutcomeViolation: the call broke a rule of its own (bad arguments,
	// a path outside the pools, an unknown tool...).
	OutcomeViolation Outcome = "violation"
	// OutcomeError: it failed (an internal error, the store or an
	// upstream unavailable, an operator's order that could not be done).
	OutcomeError Outcome = "error"
	// OutcomeCancelled: the client cancelled the call (or went away)
	// before it finished; not a failure of Airlock's.
	OutcomeCancelled Outcome = "cancelled"
	// OutcomeStarted marks the record a consequential call writes before
	// it executes, so an unwritable store stops it before any side effect.
	OutcomeStarted Outcome = "started"
	// OutcomeInterrupted: a consequential call (a pipeline run) that
	// never ended because its process died; recorded at the next start
	// ([RunInterrupted]).
	OutcomeInterrupted Outcome = "interrupted"
)

// Valid reports whether o is one of the outcomes above.
func (o Outcome) Valid() bool {
	switch o {
	case OutcomeOK, OutcomeDenied, OutcomeViolation, OutcomeError, OutcomeCancelled, OutcomeStarted, OutcomeInterrupted:
		return true
	}
	return false
}

// OutcomeOf is the outcome of a call that ended with a violation code: a
// refusal on purpose is "denied", Airlock's own failure "error", the
// client's cancellation "cancelled", and anything else the call's own
// "violation".
func OutcomeOf(code violation.Code) Outcome {
	switch code {
	case violation.PolicyDenied, violation.ProvenanceDenied, violation.PhaseBlocked, violation.KillSwitchEngaged,
		violation.LimitExceeded, violation.ApprovalRequired:
		return OutcomeDenied
	case violation.Internal, violation.AuditUnavailable, violation.Unavailable:
		return OutcomeError
	case violation.Cancelled:
		return OutcomeCancelled
	default:
		return OutcomeViolation
	}
}
