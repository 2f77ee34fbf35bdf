package audit

import (
	"encoding/json"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// The parameters of the constructors in events.go: what each event says,
// in the audit's own terms, so that this package needs none of the
// packages whose events it records.

// Actor is who an event of a session concerns: the session and its
// context, the principal, role and transport, and the OAuth client the
// request's token was issued to ("" for static tokens), which is recorded
// in the record's extra as client_id.
type Actor struct {
	SessionID string
	ContextID string
	Principal string
	Role      string
	Transport string
	ClientID  string
}

// record is a record of a's with kind at at.
func (a Actor) record(at time.Time, kind Kind) *Record {
	return &Record{Time: at, SessionID: a.SessionID, ContextID: a.ContextID, Principal: a.Principal,
		Role: a.Role, Transport: a.Transport, Capability: string(kind)}
}

// Operator is who gave an operator's order (its name, recorded as the
// principal "operator:<name>") and over what transport (cli, console...).
type Operator struct {
	Name      string
	Transport string
}

// operatorPrefix starts the principal of every operator's order.
const operatorPrefix = "operator:"

func (op Operator) principal() string { return operatorPrefix + op.Name }

// Edge is a refusal at the transport edge, as package edge reports it.
type Edge struct {
	Transport string
	Remote    string // host only
	Principal string // "" before authentication: recorded as "anonymous"
	Role      string
	ClientID  string
	Code      string // a stable violation code
	Reason    string
}

// Context is a runtime context as its events record it.
type Context struct {
	ID            string
	Parent        string
	Principal     string
	Role          string
	Phase         string
	Policy        string
	PolicyVersion string
	Pools         []string
}

// Expiry is a declaration that ran out of time.
type Expiry struct {
	ID        string
	ContextID string
	Owner     string // the principal who declared it
	State     string // its state when it expired
	ExpiresAt time.Time
	Undecided bool // no operator decided in time (else: approved, not used in time)
}

// Pin is an upstream tool's pinned definition as its events record it.
type Pin struct {
	Upstream       string
	Tool           string
	State          string
	SeenDigest     string
	ApprovedDigest string
	Flags          int  // how many flags the seen definition raised
	Blocked        bool // changed since it was approved: calls are refused
}

// Override is what an operator's approval of an upstream tool's
// definition decided beyond the digest (issue 25).
type Override struct {
	Reason       string   // the operator's, required
	Overridden   bool     // the review flagged what reaches the agent; approved anyway
	Score        float64  // the review's score of what reaches the agent
	Signals      []string // its signals
	EditedSHA256 string   // of the operator's description for the catalog; "" for the upstream's
}

// Egress is one request of a sandboxed upstream through its egress proxy.
type Egress struct {
	Method  string // CONNECT or the HTTP method
	Host    string // empty when the request did not parse
	Port    int
	Allowed bool
	Code    violation.Code // of a refusal
	Err     error          // of a refusal, if any
}

// Kill is one change of the kill switch.
type Kill struct {
	ID      string // the change's id from the kill switch file
	Engaged bool
	By      string // the operator's name
	Reason  string
	At      time.Time // when it was made
}

// Task is a context's task text as its record names it: never the text.
type Task struct {
	Input  string // its id among the context's trusted inputs
	SHA256 string // of the text; "" when it was not stored
	Bytes  int
}

// Endorsement is what one endorsement act vouched for.
type Endorsement struct {
	DeclarationID string // the need the values came from; "" for none
	Values        []EndorsedValue
	Skipped       []SkippedValue // values that could not be endorsed; nil: none listed
}

// EndorsedValue is one value endorsed, by its keyed hash.
type EndorsedValue struct {
	Arg       string // the argument it was found in
	ID        string // the endorsement's id (derived from the value)
	ValueHMAC string // the audit's keyed hash of the value
	Already   bool   // endorsed before in this context, or twice in this act
}

// SkippedValue is one value of a need left unendorsed, and why.
type SkippedValue struct {
	Arg string
	Why string
}

// jsonOf is the JSON of v, which cannot fail for the maps the
// constructors build; if it did, the record says so rather than lose the
// event.
func jsonOf(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
	}
	return b
}

// WithClient adds client_id to a record's extra JSON object (nil: a new
// one) when clientID is not empty. Extra that is not an object is left as
// it is.
func WithClient(extra json.RawMessage, clientID string) json.RawMessage {
	return withClient(extra, clientID)
}

func withClient(extra json.RawMessage, clientID string) json.RawMessage {
	if clientID == "" {
		return extra
	}
	m := map[string]json.RawMessage{}
	if len(extra) > 0 && (json.Unmarshal(extra, &m) != nil || m == nil) { // null: a nil map
		return extra // not an object: leave it as it is
	}
	m["client_id"] = jsonOf(clientID)
	return jsonOf(m)
}
