package audit

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
)

// canonicalTag starts every record's canonical encoding. A change to the
// encoding gets a new tag, never a silent reinterpretation of old hashes:
// v1 records (no instance) keep their hashes, and a record with an
// instance is encoded as v2, which appends it. Blanking a v2 record's
// instance, or giving a v1 record one, changes the tag and so the hash.
const (
	canonicalTag   = "airlock.audit.v1"
	canonicalTagV2 = "airlock.audit.v2"
)

// Canonical returns the bytes a record's hash covers, apart from its
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
// not do: it compacts RawMessage and rewrites invalid UTF-8 as U+FFFD, so
// two different stored rows could hash alike.) Hash and PrevHash are never
// part of it. The golden files in testdata pin these bytes for every event
// kind: old chains verify only while they do not change.
func (r *Record) Canonical() []byte { return r.AppendCanonical(nil) }

// AppendCanonical appends r's canonical encoding to b (the verifier reuses
// one buffer for a whole chain).
func (r *Record) AppendCanonical(b []byte) []byte {
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
		string(r.Args), string(r.Outcome), r.Violation, r.ErrorRef, r.Error,
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
	sum := sha256.Sum256(r.AppendCanonical([]byte(r.PrevHash)))
	return hex.EncodeToString(sum[:])
}

// CanonicalSeq reads the seq out of a canonical encoding (a sealed
// segment stores records in it): the seq follows the length-prefixed tag,
// v1 or v2. ok is false when enc does not start with one.
func CanonicalSeq(enc []byte) (seq int64, ok bool) {
	if len(enc) < 8 {
		return 0, false
	}
	n := binary.BigEndian.Uint64(enc)
	if n != uint64(len(canonicalTag)) || uint64(len(enc)) < 8+n+8 {
		return 0, false
	}
	if tag := string(enc[8 : 8+n]); tag != canonicalTag && tag != canonicalTagV2 {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(enc[8+n:])), true
}
