package attribution

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"strings"
	"time"
	"unicode/utf8"
)

// Errors. Verify and VerifyEnvelope return exactly one of the first four
// (possibly wrapped, so compare with errors.Is); ParseEnvelope may also
// return ErrMalformed.
var (
	// ErrMissing: there is no attribution, or it carries no signature.
	ErrMissing = errors.New("attribution: missing or unsigned")
	// ErrBadSignature: the signature is malformed or does not match the
	// fields: a field was altered, the record forged, or another key signed it.
	ErrBadSignature = errors.New("attribution: bad signature")
	// ErrContentMismatch: the signature is good but the content is not the
	// content it was made for.
	ErrContentMismatch = errors.New("attribution: content does not match its hash")
	// ErrWrongSession: a genuine attribution replayed into another session.
	ErrWrongSession = errors.New("attribution: belongs to another session")
	// ErrMalformed: ParseEnvelope could not read the data as a tool result
	// or an envelope.
	ErrMalformed = errors.New("attribution: malformed envelope")
	// ErrShortKey: NewSigner needs at least MinKeyBytes of key.
	ErrShortKey = errors.New("attribution: signing key too short")
)

const (
	// MinKeyBytes is the shortest key NewSigner accepts (256 bits).
	MinKeyBytes = 32
	// SignaturePrefix starts every signature; 64 lowercase hex digits follow.
	SignaturePrefix = "hmac-sha256:"

	// canonicalTag starts the signed encoding; a new encoding gets a new tag.
	canonicalTag = "airlock.attribution.v1"
	// subkeyLabel derives the signing key from the stored key, so the same
	// stored key used for another HMAC (redaction, audit) can never yield a
	// MAC that verifies here.
	subkeyLabel = "airlock attribution signing key v1"
)

// Attribution says who and what produced a piece of external content, and
// when. Signature covers every other field (see the package doc for the
// exact encoding).
type Attribution struct {
	ID            string    `json:"id"`
	Source        string    `json:"source"`
	RetrievedAt   time.Time `json:"retrieved_at"`
	SessionID     string    `json:"session_id"`
	DeclarationID string    `json:"declaration_id"`
	ContentSHA256 string    `json:"content_sha256"` // lowercase hex SHA-256 of exactly the content carried
	TrustLevel    string    `json:"trust_level"`
	Kind          string    `json:"kind"`
	Signature     string    `json:"signature"` // "hmac-sha256:<64 hex>"
}

// Signer signs and verifies attributions with one key. It is immutable and
// safe for concurrent use.
type Signer struct {
	key []byte // derived subkey, never the stored key itself
}

// NewSigner returns a Signer for key, which must be at least MinKeyBytes
// long and should come from crypto/rand; the caller persists it (in the
// store) so attributions verify across restarts. key is not retained.
func NewSigner(key []byte) (*Signer, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("%d bytes, need %d: %w", len(key), MinKeyBytes, ErrShortKey)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(subkeyLabel))
	return &Signer{key: m.Sum(nil)}, nil
}

// ContentHash returns the lowercase hex SHA-256 of content, the form
// Attribution.ContentSHA256 holds.
func ContentHash[T ~string | ~[]byte](content T) string {
	h := sha256.New()
	writeChunks(h, content)
	return hex.EncodeToString(h.Sum(nil))
}

// writeChunks writes content to h without converting a whole string to a
// []byte (which would copy it to the heap).
func writeChunks[T ~string | ~[]byte](h hash.Hash, content T) {
	var buf [8 << 10]byte
	for len(content) > 0 {
		n := copy(buf[:], content)
		h.Write(buf[:n])
		content = content[n:]
	}
}

// Sign returns a with Signature set. Before signing it puts RetrievedAt in
// UTC (the instant is signed, not its time zone) and replaces invalid UTF-8
// in string fields with U+FFFD, byte by byte as encoding/json does, so that
// the signed record survives a JSON round trip (TestSignSurvivesJSON).
// Fields are signed as given: fill ContentSHA256 with [ContentHash] first.
func (s *Signer) Sign(a Attribution) Attribution {
	for _, f := range []*string{&a.ID, &a.Source, &a.SessionID, &a.DeclarationID, &a.ContentSHA256, &a.TrustLevel, &a.Kind} {
		if !utf8.ValidString(*f) {
			*f = string([]rune(*f))
		}
	}
	a.RetrievedAt = a.RetrievedAt.UTC()
	a.Signature = SignaturePrefix + hex.EncodeToString(s.mac(a))
	return a
}

// Verify checks a against the content it claims to describe and the
// session asking. In order: no signature is ErrMissing; a malformed or
// non-matching signature is ErrBadSignature (compared with hmac.Equal, in
// constant time); a content hash that differs is ErrContentMismatch; a
// SessionID other than sessionID, or an empty sessionID, is
// ErrWrongSession. nil means all four hold.
func (s *Signer) Verify(a Attribution, content []byte, sessionID string) error {
	if a.Signature == "" {
		return ErrMissing
	}
	got, ok := parseSignature(a.Signature)
	if !ok {
		return fmt.Errorf("signature is not %s<64 lowercase hex>: %w", SignaturePrefix, ErrBadSignature)
	}
	if !hmac.Equal(got, s.mac(a)) {
		return ErrBadSignature
	}
	if ContentHash(content) != a.ContentSHA256 {
		return ErrContentMismatch
	}
	if sessionID == "" || a.SessionID != sessionID {
		return fmt.Errorf("attribution %q is for session %q, not %q: %w", a.ID, a.SessionID, sessionID, ErrWrongSession)
	}
	return nil
}

func parseSignature(sig string) ([]byte, bool) {
	h, ok := strings.CutPrefix(sig, SignaturePrefix)
	if !ok || len(h) != 2*sha256.Size || strings.ToLower(h) != h {
		return nil, false
	}
	b, err := hex.DecodeString(h)
	return b, err == nil
}

// mac is HMAC-SHA256, under the subkey, of canonical(a).
func (s *Signer) mac(a Attribution) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write(canonical(a))
	return m.Sum(nil)
}

// canonical is the signed encoding of every field but Signature:
//
//	"airlock.attribution.v1"
//	then for each of id, source, retrieved_at, session_id, declaration_id,
//	content_sha256, trust_level, kind, in this order:
//	  8-byte big-endian byte length, then the bytes
//
// retrieved_at is RetrievedAt.UTC().Format(time.RFC3339Nano). The length
// prefixes make it injective: two different records never encode alike,
// however their values are split (TestCanonicalInjective).
func canonical(a Attribution) []byte {
	fields := [...]string{
		a.ID, a.Source, a.RetrievedAt.UTC().Format(time.RFC3339Nano), a.SessionID,
		a.DeclarationID, a.ContentSHA256, a.TrustLevel, a.Kind,
	}
	n := len(canonicalTag)
	for _, f := range fields {
		n += 8 + len(f)
	}
	b := make([]byte, 0, n)
	b = append(b, canonicalTag...)
	for _, f := range fields {
		b = binary.BigEndian.AppendUint64(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}
