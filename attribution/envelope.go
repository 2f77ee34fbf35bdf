package attribution

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/airlock-dev/airlock/internal/kit/strictjson"
)

// MaxEnvelopeBytes bounds what ParseEnvelope reads.
const MaxEnvelopeBytes = 256 << 20

// maxDepth bounds JSON nesting in ParseEnvelope.
const maxDepth = 64

// Envelope is the structured content a tool result carries for attributed
// content: the signed attribution and exactly the content it hashes.
type Envelope struct {
	Attribution Attribution `json:"attribution"`
	Content     string      `json:"content"`
}

// VerifyEnvelope parses data with [ParseEnvelope] and verifies the result
// with [Signer.Verify] for sessionID. It returns the envelope only when it
// verifies; callers must use that envelope, not re-read data with another
// parser. This backs `airlock attribution verify FILE`.
func (s *Signer) VerifyEnvelope(data []byte, sessionID string) (*Envelope, error) {
	env, err := ParseEnvelope(data)
	if err != nil {
		return nil, err
	}
	if err := s.Verify(env.Attribution, []byte(env.Content), sessionID); err != nil {
		return nil, err
	}
	return env, nil
}

// ParseEnvelope reads, without verifying, one of:
//
//   - an MCP CallToolResult: {"content": [...], "structuredContent":
//     {"attribution": {...}, "content": "..."}, ...}
//   - a JSON-RPC response holding one: {"jsonrpc": "2.0", "id": 1, "result": {...}}
//   - a bare Envelope: {"attribution": {...}, "content": "..."}
//
// Only structuredContent is read from a tool result; the text blocks in its
// "content" array are presentation and are not covered by the signature.
// Parsing is strict, to leave no room for parser differentials (two
// readers of one file seeing different records): duplicate object keys are
// refused at every depth, keys must match exactly (encoding/json would
// otherwise accept "Attribution" or "SESSION_ID"), the attribution object
// may hold only its nine fields, each a JSON string, and nothing may follow
// the document. A document with no attribution is ErrMissing; anything else
// wrong is ErrMalformed.
func ParseEnvelope(data []byte) (*Envelope, error) {
	if len(data) > MaxEnvelopeBytes {
		return nil, fmt.Errorf("%d bytes, limit %d: %w", len(data), MaxEnvelopeBytes, ErrMalformed)
	}
	if err := strictjson.Check(data, maxDepth); err != nil {
		return nil, fmt.Errorf("%v: %w", err, ErrMalformed)
	}
	obj, err := object(data, "document")
	if err != nil {
		return nil, err
	}
	if raw, ok := obj["result"]; ok && hasOnly(obj, "jsonrpc", "id", "result") {
		if obj, err = object(raw, "result"); err != nil {
			return nil, err
		}
	}
	if err := exactKeys(obj, "structuredContent", "attribution", "content", "result"); err != nil {
		return nil, err
	}
	if raw, ok := obj["structuredContent"]; ok {
		if _, both := obj["attribution"]; both {
			return nil, fmt.Errorf("both structuredContent and a top-level attribution: %w", ErrMalformed)
		}
		if obj, err = object(raw, "structuredContent"); err != nil {
			return nil, err
		}
	}
	return envelope(obj)
}

// envelope reads the object holding "attribution" and "content".
func envelope(obj map[string]json.RawMessage) (*Envelope, error) {
	if err := exactKeys(obj, "attribution", "content"); err != nil {
		return nil, err
	}
	raw, ok := obj["attribution"]
	if !ok || string(raw) == "null" {
		return nil, ErrMissing
	}
	a, err := attribution(raw)
	if err != nil {
		return nil, err
	}
	if _, ok := obj["content"]; !ok {
		return nil, fmt.Errorf("no content beside the attribution: %w", ErrMalformed)
	}
	env := &Envelope{Attribution: a}
	if err := str(obj, "content", &env.Content); err != nil {
		return nil, err
	}
	return env, nil
}

// attribution decodes the attribution object strictly.
func attribution(raw json.RawMessage) (Attribution, error) {
	var a Attribution
	obj, err := object(raw, "attribution")
	if err != nil {
		return a, err
	}
	fields := map[string]*string{
		"id": &a.ID, "source": &a.Source, "session_id": &a.SessionID, "declaration_id": &a.DeclarationID,
		"content_sha256": &a.ContentSHA256, "trust_level": &a.TrustLevel, "kind": &a.Kind, "signature": &a.Signature,
	}
	for k := range obj {
		if _, ok := fields[k]; !ok && k != "retrieved_at" {
			return a, fmt.Errorf("unknown attribution field %q: %w", k, ErrMalformed)
		}
	}
	for k, p := range fields {
		if err := str(obj, k, p); err != nil {
			return a, err
		}
	}
	var when string
	if err := str(obj, "retrieved_at", &when); err != nil {
		return a, err
	}
	if when != "" {
		if a.RetrievedAt, err = time.Parse(time.RFC3339Nano, when); err != nil {
			return a, fmt.Errorf("retrieved_at: %v: %w", err, ErrMalformed)
		}
	}
	return a, nil
}

// object decodes raw as a JSON object (not null, not an array).
func object(raw json.RawMessage, what string) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, fmt.Errorf("%s is not a JSON object: %w", what, ErrMalformed)
	}
	return obj, nil
}

// str decodes obj[key], when present, as a JSON string (null refused).
func str(obj map[string]json.RawMessage, key string, dst *string) error {
	raw, ok := obj[key]
	if !ok {
		return nil
	}
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, dst) != nil {
		return fmt.Errorf("%s is not a JSON string: %w", key, ErrMalformed)
	}
	return nil
}

func hasOnly(obj map[string]json.RawMessage, keys ...string) bool {
	for k := range obj {
		found := false
		for _, want := range keys {
			found = found || k == want
		}
		if !found {
			return false
		}
	}
	return true
}

// exactKeys refuses a key that matches one of known only case-insensitively:
// a reader that folds case (encoding/json into a struct) would take it for
// the real field while this parser ignored it.
func exactKeys(obj map[string]json.RawMessage, known ...string) error {
	for k := range obj {
		for _, want := range known {
			if k != want && strings.EqualFold(k, want) {
				return fmt.Errorf("key %q is not %q: %w", k, want, ErrMalformed)
			}
		}
	}
	return nil
}
