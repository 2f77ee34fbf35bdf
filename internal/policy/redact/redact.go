// Package redact replaces secrets in call arguments with keyed hashes before
// anything is recorded.
//
// A secret becomes "hmac-sha256:<hex>" under a key persisted in the store
// (after vault's audit hashing): the audit trail never holds the secret, yet
// an operator who has the secret can recompute the HMAC and find every call
// that used it. Two things mark a value secret: its key looks like a
// credential name (token, password, api_key, authorization, ...), or the
// string itself looks like a credential (a bearer token, a private key block,
// a well-known key prefix, a URL with a password). In any string, the value
// of a credential-bearing URL query parameter ("?access_token=…") is hashed
// too, the rest of the URL kept readable ([Query]). Redaction is applied to
// a copy; the tool still receives the real arguments.
package redact

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
)

// Prefix marks a redacted value.
const Prefix = "hmac-sha256:"

// Redactor hashes secrets with a fixed key. It is safe for concurrent use.
type Redactor struct{ key []byte }

// New returns a Redactor using key (at least 32 bytes is recommended).
func New(key []byte) *Redactor { return &Redactor{key: bytes.Clone(key)} }

// Hash returns the redacted form of s.
func (r *Redactor) Hash(s string) string {
	m := hmac.New(sha256.New, r.key)
	m.Write([]byte(s))
	return Prefix + hex.EncodeToString(m.Sum(nil))
}

// JSON returns a redacted copy of a JSON document. Input that is not valid
// JSON is replaced whole by its hash: unparseable bytes are never recorded
// verbatim, since they could hide a secret the walker cannot see.
func (r *Redactor) JSON(raw []byte) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		out, _ := json.Marshal(map[string]string{"unparseable": r.Hash(string(raw))})
		return out
	}
	out, err := json.Marshal(r.Value(v))
	if err != nil {
		out, _ = json.Marshal(map[string]string{"unmarshalable": r.Hash(string(raw))})
	}
	return out
}

// Value returns a redacted copy of a decoded JSON value.
func (r *Redactor) Value(v any) any { return r.walk(v, false) }

func (r *Redactor) walk(v any, sensitive bool) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			out[k] = r.walk(val, sensitive || sensitiveKey(k))
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			out[i] = r.walk(val, sensitive)
		}
		return out
	case string:
		if sensitive || secretValue(t) {
			return r.Hash(t)
		}
		return Query(r.stripURLPassword(t), r.Hash)
	case json.Number, float64, bool, nil:
		if sensitive && t != nil {
			return r.Hash(toString(t))
		}
		return t
	default:
		return t
	}
}

// stripURLPassword hashes the password of a URL with userinfo
// ("https://user:pw@host/") and leaves the rest readable for the audit.
func (r *Redactor) stripURLPassword(s string) string {
	if !strings.Contains(s, "@") || !strings.Contains(s, "://") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if pw, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), r.Hash(pw))
		return u.String()
	}
	return s
}

func toString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
