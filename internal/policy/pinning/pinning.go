package pinning

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/strictjson"
	"github.com/airlock-dev/airlock/internal/policy/poisoning"
)

// Definition is one tool as an upstream lists it.
type Definition struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema,omitempty"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// ErrDefinition reports a definition that cannot be pinned.
var ErrDefinition = errors.New("unpinnable tool definition")

// maxSchemaDepth bounds schema nesting (a hostile upstream's 100k-deep
// schema fails fast).
const maxSchemaDepth = 64

// Digest is the SHA-256 of the definition's canonical encoding: each
// field length-prefixed, schemas re-encoded with sorted keys and no
// insignificant whitespace, so reordering a schema's keys is no change and
// any change of meaning is.
func Digest(d Definition) (string, error) {
	in, err := canonicalSchema("inputSchema", d.InputSchema)
	if err != nil {
		return "", err
	}
	out, err := canonicalSchema("outputSchema", d.OutputSchema)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, part := range [][]byte{[]byte("airlock-pin-v1"), []byte(d.Name), []byte(d.Description), in, out} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func canonicalSchema(field string, raw json.RawMessage) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	if err := strictjson.Check(raw, maxSchemaDepth); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDefinition, field, err)
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // 1.0 and 1 stay different, as their writer meant
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDefinition, field, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("%w: %s is not a JSON object", ErrDefinition, field)
	}
	return json.Marshal(v) // maps encode with sorted keys
}

// State is where a pinned tool stands.
type State string

// The states of a pin.
const (
	// Pending: seen, never approved; not usable.
	Pending State = "pending"
	// Approved: usable while the upstream lists exactly this definition.
	Approved State = "approved"
	// Changed: approved once, now listed differently; blocked until the
	// new definition is approved.
	Changed State = "changed"
	// Removed: approved once, no longer listed.
	Removed State = "removed"
)

// Pin is the reviewed state of one upstream tool.
type Pin struct {
	Upstream string `json:"upstream"`
	Tool     string `json:"tool"`
	// Approved is the definition an operator approved (empty until then),
	// Seen the one the upstream lists now.
	Approved       *Definition `json:"approved,omitempty"`
	ApprovedDigest string      `json:"approved_digest,omitempty"`
	ApprovedBy     string      `json:"approved_by,omitempty"`
	ApprovedAt     time.Time   `json:"approved_at,omitzero"`
	Seen           *Definition `json:"seen,omitempty"`
	SeenDigest     string      `json:"seen_digest,omitempty"`
	State          State       `json:"state"`
	Flags          []Flag      `json:"flags,omitempty"` // of Seen
	Score          float64     `json:"score,omitempty"` // of Seen, the review's (poisoning.Report.Score)
	// Decision is the operator's override and edited description for
	// the approved digest (ApproveReviewed), kept by the store beside the
	// pin, not in it.
	Decision *Decision `json:"-"`
	// Reviewed is the definition the operator's last review showed
	// (MarkReviewed): what `airlock upstreams approve UPSTREAM --all`
	// approves, and only while it is still the one listed (SetChanges).
	Reviewed *Reviewed `json:"reviewed,omitempty"`
}

// Usable reports whether calls to the tool may go ahead: approved, and
// still listed exactly as approved.
func (p *Pin) Usable() bool {
	return p != nil && p.State == Approved && p.ApprovedDigest != "" && p.ApprovedDigest == p.SeenDigest
}

// Observe updates a pin (nil for a tool never seen) with what the upstream
// lists now: a new tool is pending, an approved one whose digest changed is
// Changed (blocked), an unchanged one keeps its state. It returns the new
// pin and whether its state or its seen definition changed (to store and
// audit).
func Observe(upstream string, old *Pin, seen Definition) (*Pin, bool, error) {
	digest, err := Digest(seen)
	if err != nil {
		return nil, false, err
	}
	p := &Pin{Upstream: upstream, Tool: seen.Name, State: Pending}
	if old != nil {
		*p = *old
	}
	def := seen
	if old == nil || old.SeenDigest != digest || old.Seen == nil {
		// Reviewed once per definition: every call lists the tools again,
		// and an unchanged one keeps the review it got.
		p.Flags, p.Score = flagsOf(poisoning.Scan(toolOf(upstream, seen), nil))
	}
	p.Seen, p.SeenDigest = &def, digest
	prev := p.State
	switch {
	case p.ApprovedDigest == "":
		p.State = Pending
	case p.ApprovedDigest == digest:
		p.State = Approved
	default:
		p.State = Changed
	}
	// A new definition is a change even when the state stays (pending
	// → pending, changed → changed): the stored Seen must be the one
	// listed now, or the review would show, and an approval cover, a
	// definition the upstream no longer lists.
	return p, old == nil || prev != p.State || old.SeenDigest != digest, nil
}

// Vanish marks an approved tool the upstream no longer lists.
func Vanish(p *Pin) (*Pin, bool) {
	if p.State == Removed {
		return p, false
	}
	out := *p
	out.State, out.Seen, out.SeenDigest, out.Flags, out.Score = Removed, nil, "", nil, 0
	return &out, true
}

// ErrStale refuses an approval of a definition other than the one listed
// now: the operator approves what they reviewed, nothing else.
var ErrStale = errors.New("the definition changed since it was reviewed")

// ErrDigestSyntax refuses a digest that is not (a long enough prefix of) a
// hex SHA-256 as the review prints it.
var ErrDigestSyntax = errors.New("not a digest the review printed")

// MinDigestPrefix is the shortest digest prefix an approval takes, in hex
// digits (64 bits). A prefix is compared with the definition listed at
// approval time, which an upstream controls: with 8 digits it could grind
// a poisoned definition to the reviewed prefix in 2^32 tries (seconds)
// between the review and the approval; 2^64 is out of its reach.
const MinDigestPrefix = 16

// ParseDigest reads a digest as an operator copies it from the review or
// the README: an optional "sha256:", then at least MinDigestPrefix
// hex digits (case-insensitive), optionally cut with "…" or "...". It
// returns the lowercase hex, or ErrDigestSyntax saying exactly what is
// wrong with it.
func ParseDigest(s string) (string, error) {
	h := strings.TrimPrefix(strings.TrimSpace(s), "sha256:")
	cut := strings.TrimSuffix(strings.TrimSuffix(h, "…"), "...")
	h = strings.ToLower(cut)
	switch {
	case h == "":
		return "", fmt.Errorf("empty digest: %w", ErrDigestSyntax)
	case strings.Trim(h, "0123456789abcdef") != "":
		return "", fmt.Errorf("digest %q: only hex digits after sha256: (copy it from airlock upstreams review): %w", s, ErrDigestSyntax)
	case len(h) > 2*sha256.Size:
		return "", fmt.Errorf("digest %q has %d hex digits, a SHA-256 has %d: %w", s, len(h), 2*sha256.Size, ErrDigestSyntax)
	case len(h) < MinDigestPrefix:
		return "", fmt.Errorf("digest %q is too short to approve by: give at least %d of the hex digits airlock upstreams review prints, or all %d (a shorter prefix could match a definition made to collide with it): %w",
			s, MinDigestPrefix, 2*sha256.Size, ErrDigestSyntax)
	}
	return h, nil
}

// Approve approves the definition the pin holds as Seen, whose digest must
// still start with reviewedDigest (the whole digest the review printed, or
// a prefix of at least MinDigestPrefix digits: see ParseDigest). The error
// says exactly what is wrong: a malformed or short digest
// (ErrDigestSyntax), a tool no longer listed, or a definition listed now
// that is not the reviewed one (ErrStale).
func Approve(p *Pin, reviewedDigest, by string, now time.Time) (*Pin, error) {
	want, err := ParseDigest(reviewedDigest)
	if err != nil {
		return nil, fmt.Errorf("%s/%s: %w", p.Upstream, p.Tool, err)
	}
	switch {
	case p.Seen == nil:
		return nil, fmt.Errorf("%s/%s is no longer listed by the upstream: nothing to approve: %w", p.Upstream, p.Tool, ErrStale)
	case !strings.HasPrefix(p.SeenDigest, want):
		if len(want) < 2*sha256.Size {
			want += "…"
		}
		return nil, fmt.Errorf("%s/%s: the definition the upstream lists now is not sha256:%s — it changed since the review, or the digest is mistyped; review it again and approve the digest the review prints: %w",
			p.Upstream, p.Tool, want, ErrStale)
	}
	out := *p
	def := *p.Seen
	out.Approved, out.ApprovedDigest, out.ApprovedBy, out.ApprovedAt, out.State = &def, p.SeenDigest, by, now.UTC(), Approved
	return &out, nil
}

// Diff describes how Seen differs from Approved, field by field, for the
// review: whole fields, quoted, so hidden characters show as escapes.
func Diff(p *Pin) []string {
	if p.Approved == nil || p.Seen == nil {
		return nil
	}
	var out []string
	a, s := p.Approved, p.Seen
	if a.Description != s.Description {
		out = append(out, fmt.Sprintf("description: %q → %q", a.Description, s.Description))
	}
	for _, f := range []struct {
		name string
		a, b json.RawMessage
	}{{"inputSchema", a.InputSchema, s.InputSchema}, {"outputSchema", a.OutputSchema, s.OutputSchema}} {
		ca, _ := canonicalSchema(f.name, f.a)
		cb, _ := canonicalSchema(f.name, f.b)
		if !bytes.Equal(ca, cb) {
			out = append(out, fmt.Sprintf("%s: %s → %s", f.name, orNone(ca), orNone(cb)))
		}
	}
	return out
}

func orNone(b []byte) string {
	if len(b) == 0 {
		return "(none)"
	}
	return strings.TrimSpace(string(b))
}
