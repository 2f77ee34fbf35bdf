// Package attribution records who and what produced a piece of external
// content, and when, in a form that cannot be changed or forged unnoticed.
//
// An [Attribution] names the content's source, retrieval time, session,
// declaration, SHA-256 and trust level. [Signer.Sign] signs it with
// HMAC-SHA256 under a key the caller persists in the store; [Signer.Verify]
// checks it against the content and the session asking;
// [Signer.VerifyEnvelope] does the same for a saved MCP tool result, which
// carries an [Envelope] ({"attribution": …, "content": …}) as its
// structured content.
//
// # Invariants
//
//   - Changing any field, the signature or the content is detected:
//     a field or signature change is [ErrBadSignature], a content change
//     [ErrContentMismatch]; an unsigned or absent record is [ErrMissing];
//     a genuine record replayed in another session is [ErrWrongSession]
//     (TestVerifyTampering).
//   - Only a holder of the key can make a record that verifies
//     (FuzzVerifyEnvelope). Signatures are compared with hmac.Equal.
//   - The signed bytes are defined below, not by a JSON encoder, so they
//     cannot drift with field order or encoder changes.
//   - Envelope parsing is strict (duplicate keys, case-variant keys,
//     unknown attribution fields and trailing data are refused), so two
//     readers of one file cannot see different records.
//
// # Signed encoding
//
// The MAC is HMAC-SHA256 under a subkey,
// HMAC-SHA256(stored key, "airlock attribution signing key v1"), so the
// stored key can be shared with other HMAC uses without a MAC made for one
// ever verifying as another. It covers:
//
//	"airlock.attribution.v1"
//	then for each of id, source, retrieved_at, session_id, declaration_id,
//	content_sha256, trust_level, kind, in this order:
//	    the value's length in bytes as a big-endian uint64, then the value
//
// with retrieved_at written as RetrievedAt.UTC().Format(time.RFC3339Nano).
// The length prefixes make the encoding injective. The signature is
// "hmac-sha256:" and 64 lowercase hex digits. TestKnownAnswer pins all of it.
//
// # Limits
//
//   - HMAC is symmetric: whoever can verify can also sign. Verification is
//     for Airlock and its operators, who hold the store's key; a third
//     party cannot check a record without it. Public-key signatures would
//     be the next step.
//   - There is one key and no key id; rotating the key makes every earlier
//     record fail with ErrBadSignature.
//   - The signature says Airlock recorded this content from this source at
//     this time. It does not say the source told the truth, and the time is
//     Airlock's clock.
//   - ContentSHA256 covers exactly the bytes in Envelope.Content (for the
//     runner, the fenced, sanitized content), not the raw bytes fetched,
//     and not the text blocks of a tool result.
//   - The signed time is the instant; the time zone it was written in is
//     not signed.
package attribution
