package state

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/airlock-dev/airlock/internal/policy/limits"
)

// The keys the store holds (store.DB.Key), by name: the runner and the
// operator's API each load them by these names, so an attribution signed
// by a server verifies on the CLI and a handle the CLI mints opens a
// context on a server.
const (
	// AttributionKey signs attributions.
	AttributionKey = "attribution"
	// ContextHandleKey signs context handles (ContextHandle).
	ContextHandleKey = "context-handle"
	// ChallengeKey signs approval questions.
	ChallengeKey = "approval-challenge"
)

// A context handle is "ctxh_<id>.<mac>": a client presents it (the
// Airlock-Context header, or --context on stdio) to run in a child context.
// The MAC means a client cannot name a context it was not given; the
// runner's principal check means a handle given to one principal is
// useless to another.
const handlePrefix = "ctxh_"

// ContextHandle is the handle of context id under key (ContextHandleKey).
func ContextHandle(key []byte, id string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("airlock context handle\x00" + id))
	return handlePrefix + id + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// ContextOfHandle returns the context id handle h names, if key signed it.
func ContextOfHandle(key []byte, h string) (string, bool) {
	rest, ok := strings.CutPrefix(h, handlePrefix)
	if !ok || len(h) > 256 {
		return "", false
	}
	id, _, ok := strings.Cut(rest, ".")
	if !ok || !hmac.Equal([]byte(ContextHandle(key, id)), []byte(h)) {
		return "", false
	}
	return id, true
}

// Usage keys in the store: a context's counters (max_actions,
// max_total_cost) and a principal's rate buckets. Rates follow the
// principal rather than the context so that a fresh child context does not
// come with a fresh rate. The runner counts under them; the operator's API
// reads a context's usage.

// CounterKey is the usage key of a context's counters.
func CounterKey(contextID string) string { return "context:" + contextID }

// RateKey is the usage key of a principal's rate buckets.
func RateKey(principal string) string { return "rate:" + principal }

// DecodeUsage decodes the limit usage stored under a usage key (empty: none
// yet).
func DecodeUsage(b []byte) (*limits.State, error) {
	st := &limits.State{}
	if len(b) == 0 {
		return st, nil
	}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("stored limit usage is unreadable: %w", err)
	}
	return st, nil
}
