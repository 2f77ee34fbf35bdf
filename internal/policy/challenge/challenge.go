// Package challenge mints and checks the approval questions Airlock asks a
// person at the client. A client's answer counts only when it answers a
// question the server issued: the question travels as a token (the request
// state of an input-required result, or the state the legacy elicitation
// bridge carries) that binds the declaration, the runtime context, the
// principal, a digest of the need, the policy version and an expiry, under
// an HMAC-SHA256 with a key only the server holds. A nonce makes each token
// single-use; the caller records used nonces in the store.
//
// The attacks this blocks: an agent that puts an "approve" answer in its
// first call (no token), one that edits a token (bad MAC), one that replays
// an answered token (nonce used), one that answers a question about another
// declaration or another context (binding mismatch), and one that answers
// after the policy changed or too late (version, expiry).
package challenge

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Prefix marks a challenge token, so that other request states are told
// apart before any decoding.
const Prefix = "alc1."

// maxTokenBytes bounds what Verify will decode: a token Airlock mints is
// well under 1 KiB.
const maxTokenBytes = 2048

// Claims is what a challenge binds.
type Claims struct {
	DeclarationID string    `json:"d"`
	ContextID     string    `json:"c"`
	Principal     string    `json:"p"`
	NeedDigest    string    `json:"n"`
	PolicyVersion string    `json:"v"`
	Expires       time.Time `json:"e"`
	Nonce         string    `json:"r"`
}

// Errors Verify returns; each says which check failed.
var (
	ErrMalformed = errors.New("not a challenge Airlock issued")
	ErrSignature = errors.New("challenge signature does not verify")
	ErrExpired   = errors.New("challenge expired")
	ErrMismatch  = errors.New("challenge was issued for something else")
)

// Keyed mints and verifies challenges under one key.
type Keyed struct{ key []byte }

// New returns a minter/verifier for key (at least 32 bytes).
func New(key []byte) (*Keyed, error) {
	if len(key) < 32 {
		return nil, fmt.Errorf("challenge: key of %d bytes, want at least 32", len(key))
	}
	return &Keyed{key: bytes.Clone(key)}, nil
}

// Mint returns a token for c with a fresh nonce (c.Nonce is ignored).
func (k *Keyed) Mint(c Claims) (string, error) {
	var n [16]byte
	if _, err := rand.Read(n[:]); err != nil {
		return "", fmt.Errorf("challenge: nonce: %w", err)
	}
	c.Nonce = hex.EncodeToString(n[:])
	c.Expires = c.Expires.UTC().Truncate(time.Second)
	payload, err := json.Marshal(c)
	if err != nil {
		return "", fmt.Errorf("challenge: %w", err)
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	return Prefix + p + "." + base64.RawURLEncoding.EncodeToString(k.mac(p)), nil
}

// Is reports whether token looks like a challenge (it may still be forged).
func Is(token string) bool { return strings.HasPrefix(token, Prefix) }

// Verify checks token's MAC and expiry against now and that it binds want's
// declaration, context, principal, need digest and policy version (a field
// of want left empty is not compared). It returns the claims, nonce
// included, for the caller to record as used.
func (k *Keyed) Verify(token string, want Claims, now time.Time) (Claims, error) {
	var c Claims
	if len(token) > maxTokenBytes || !Is(token) {
		return c, ErrMalformed
	}
	p, sig, ok := strings.Cut(strings.TrimPrefix(token, Prefix), ".")
	if !ok {
		return c, ErrMalformed
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || base64.RawURLEncoding.EncodeToString(got) != sig { // one encoding only: no ignored bits or newlines
		return c, ErrMalformed
	}
	// The MAC is checked before the payload is parsed, so nothing an
	// attacker wrote is interpreted unless the server wrote it.
	if !hmac.Equal(got, k.mac(p)) {
		return c, ErrSignature
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return c, ErrMalformed
	}
	if err := json.Unmarshal(payload, &c); err != nil || c.Nonce == "" {
		return c, ErrMalformed
	}
	if !now.Before(c.Expires) {
		return c, ErrExpired
	}
	for _, f := range []struct{ name, got, want string }{
		{"declaration", c.DeclarationID, want.DeclarationID},
		{"context", c.ContextID, want.ContextID},
		{"principal", c.Principal, want.Principal},
		{"need", c.NeedDigest, want.NeedDigest},
		{"policy version", c.PolicyVersion, want.PolicyVersion},
	} {
		if f.want != "" && !hmac.Equal([]byte(f.got), []byte(f.want)) {
			return c, fmt.Errorf("%s differs: %w", f.name, ErrMismatch)
		}
	}
	return c, nil
}

// Peek returns the claims of a token whose MAC verifies, without checking
// expiry or binding: the declaration it names, to look that up first.
func (k *Keyed) Peek(token string) (Claims, error) {
	c, err := k.Verify(token, Claims{}, time.Time{})
	if errors.Is(err, ErrExpired) {
		return c, nil
	}
	return c, err
}

func (k *Keyed) mac(payload string) []byte {
	m := hmac.New(sha256.New, k.key)
	m.Write([]byte("airlock approval challenge v1\x00"))
	m.Write([]byte(payload))
	return m.Sum(nil)
}
