package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Record is one audit record: one tool call, or one operator action, and how
// it ended. The caller fills everything but Seq, PrevHash and Hash, which
// [DB.Append] assigns; Args must already be redacted.
type Record struct {
	Seq  int64     `json:"seq"`
	Time time.Time `json:"time"` // UTC, microsecond precision; zero means "now" on Append

	SessionID  string `json:"session_id"`
	ContextID  string `json:"context_id"`
	Principal  string `json:"principal"`
	Role       string `json:"role"`
	Transport  string `json:"transport"`
	Tool       string `json:"tool"`
	Capability string `json:"capability"`
	Tier       string `json:"tier"`
	Phase      string `json:"phase"`

	Decision string `json:"decision"`
	RuleID   string `json:"rule_id"`
	Reason   string `json:"reason"`

	// Args are the call's arguments after redaction: empty, or valid JSON,
	// stored and hashed as these exact bytes.
	Args json.RawMessage `json:"args,omitempty"`

	Outcome   string `json:"outcome"` // one of the Outcome* constants
	Violation string `json:"violation"`
	ErrorRef  string `json:"error_ref"`
	Error     string `json:"error"`

	DurationMicros int64 `json:"duration_micros"`
	OutputBytes    int64 `json:"output_bytes"`
	Truncated      bool  `json:"truncated"`

	// Extra is tool-specific detail: empty, or valid JSON, exact bytes.
	Extra json.RawMessage `json:"extra,omitempty"`

	PrevHash string `json:"prev_hash"`
	Hash     string `json:"hash"`

	// Instance names the Airlock process that appended the record
	// (Options.Instance), so that a chain several instances share says
	// which one wrote what. The store sets it; empty on records written
	// before instances were recorded.
	Instance string `json:"instance,omitempty"`
}

// The outcomes a record may carry.
const (
	OutcomeOK        = "ok"
	OutcomeDenied    = "denied"
	OutcomeViolation = "violation"
	OutcomeError     = "error"
	// OutcomeCancelled: the client cancelled the call (or went away)
	// before it finished; not a failure of Airlock's.
	OutcomeCancelled = "cancelled"
	// OutcomeStarted marks the record a consequential call writes before it
	// executes, so an unwritable store stops it before any side effect.
	OutcomeStarted = "started"
)

// timeLayout is how times are stored: fixed width, so the text sorts in time
// order, and exact to the microsecond, so it round-trips.
const timeLayout = "2006-01-02T15:04:05.000000Z"

// minTime and maxTime bound the times timeLayout can write and read back.
var (
	minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
)

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, err
	}
	return t.UTC(), nil
}

// normalize sets the fields Append owns on the caller's behalf and rejects a
// record that could not be stored and read back exactly.
func (r *Record) normalize(now time.Time) error {
	if r.Time.IsZero() {
		r.Time = now
	}
	r.Time = r.Time.UTC().Truncate(time.Microsecond)
	if r.Time.Before(minTime) || r.Time.After(maxTime) {
		return fmt.Errorf("%w: time %v outside years 1-9999", ErrInvalidRecord, r.Time)
	}
	switch r.Outcome {
	case OutcomeOK, OutcomeDenied, OutcomeViolation, OutcomeError, OutcomeCancelled, OutcomeStarted:
	default:
		return fmt.Errorf("%w: unknown outcome %q", ErrInvalidRecord, r.Outcome)
	}
	// Args and Extra must be JSON so that an export (json.Marshal of the
	// record) cannot fail on them later.
	if len(r.Args) > 0 && !json.Valid(r.Args) {
		return fmt.Errorf("%w: args are not valid JSON", ErrInvalidRecord)
	}
	if len(r.Extra) > 0 && !json.Valid(r.Extra) {
		return fmt.Errorf("%w: extra is not valid JSON", ErrInvalidRecord)
	}
	return nil
}

// canonicalTag starts every record's canonical encoding. A change to the
// encoding gets a new tag, never a silent reinterpretation of old hashes:
// v1 records (no instance) keep their hashes, and a record with an
// instance is encoded as v2, which appends it. Blanking a v2 record's
// instance, or giving a v1 record one, changes the tag and so the hash.
const (
	canonicalTag   = "airlock.audit.v1"
	canonicalTagV2 = "airlock.audit.v2"
)

// canonical returns the bytes a record's hash covers, apart from its
// prev_hash. The encoding is defined here, not by a library's behaviour:
//
//	tag      the bytes of canonicalTag, length-prefixed like a string
//	seq      int64, 8 bytes big-endian
//	time     int64 Unix microseconds, 8 bytes big-endian
//	strings  session_id context_id principal role transport tool capability
//	         tier phase decision rule_id reason args outcome violation
//	         error_ref error, each as a uint64 big-endian byte length followed
//	         by the exact bytes (args as the raw JSON bytes)
//	ints     duration_micros output_bytes, 8 bytes big-endian each
//	bool     truncated, one byte 0 or 1
//	extra    length-prefixed exact bytes
//	instance (v2 only) length-prefixed exact bytes
//
// Length prefixes make the encoding injective: no two different records
// share an encoding, whatever bytes their fields hold. (json.Marshal would
// not do: it compacts RawMessage and rewrites invalid UTF-8 as U+FFFD, so two
// different stored rows could hash alike.) Hash is never part of it.
func (r *Record) canonical() []byte { return r.appendCanonical(nil) }

// appendCanonical appends r's canonical encoding to b.
func (r *Record) appendCanonical(b []byte) []byte {
	size := 8 + len(canonicalTag) + 8*2 + 8*2 + 1 + 8*19 +
		len(r.SessionID) + len(r.ContextID) + len(r.Principal) + len(r.Role) +
		len(r.Transport) + len(r.Tool) + len(r.Capability) + len(r.Tier) +
		len(r.Phase) + len(r.Decision) + len(r.RuleID) + len(r.Reason) +
		len(r.Args) + len(r.Outcome) + len(r.Violation) + len(r.ErrorRef) +
		len(r.Error) + len(r.Extra) + 8 + len(r.Instance)
	b = slices.Grow(b, size)
	str := func(s string) []byte {
		b = binary.BigEndian.AppendUint64(b, uint64(len(s)))
		return append(b, s...)
	}
	i64 := func(v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }

	if r.Instance == "" {
		b = str(canonicalTag)
	} else {
		b = str(canonicalTagV2)
	}
	b = i64(r.Seq)
	b = i64(r.Time.UnixMicro())
	for _, s := range [...]string{
		r.SessionID, r.ContextID, r.Principal, r.Role, r.Transport, r.Tool,
		r.Capability, r.Tier, r.Phase, r.Decision, r.RuleID, r.Reason,
		string(r.Args), r.Outcome, r.Violation, r.ErrorRef, r.Error,
	} {
		b = str(s)
	}
	b = i64(r.DurationMicros)
	b = i64(r.OutputBytes)
	if r.Truncated {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = str(string(r.Extra))
	if r.Instance != "" {
		b = str(r.Instance)
	}
	return b
}

// ComputeHash returns the hash r should carry: the hex SHA-256 of
// r.PrevHash (its 64 ASCII hex characters) followed by the canonical
// encoding of r's other fields. r.Hash is ignored. Anyone holding an export
// can re-check the chain with it.
func (r *Record) ComputeHash() string {
	sum := sha256.Sum256(r.appendCanonical([]byte(r.PrevHash)))
	return hex.EncodeToString(sum[:])
}
