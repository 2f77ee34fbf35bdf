// Package calllog ties every log line a tool call causes to that call.
//
// The runner gives each call an id ([NewID]) and puts it in the call's
// context ([WithID]); a logger whose handler is wrapped by [Handler] adds
// it as the "call" attribute to every record logged with that context
// (the *Context logging methods), however deep in the call the line is
// written (the sandbox, a fetch). The id is also on the call's one info
// line, which carries the audit sequence number, so an operator goes from
// any log line to the call's audit record.
//
// Limits: a line logged without the call's context (the plain Info, Warn
// methods, or from a goroutine the call did not hand its context to)
// carries no id. [Handler] adds the attribute at the innermost open group
// of a logger made with WithGroup.
package calllog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
)

// Key is the attribute name the call id is logged under.
const Key = "call"

type idKey struct{}

// NewID returns a fresh call id: "c_" and 16 hex digits (64 random bits).
func NewID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "c_" + hex.EncodeToString(b[:])
}

// WithID returns ctx carrying the call id id.
func WithID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, idKey{}, id)
}

// ID returns the call id ctx carries, or "".
func ID(ctx context.Context) string {
	id, _ := ctx.Value(idKey{}).(string)
	return id
}

// Handler wraps h so that a record logged with a context carrying a call
// id gets the "call" attribute. Wrapping an already wrapped handler
// returns it unchanged, so the id is never added twice.
func Handler(h slog.Handler) slog.Handler {
	if _, ok := h.(handler); ok {
		return h
	}
	return handler{h}
}

type handler struct{ inner slog.Handler }

func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	if id := ID(ctx); id != "" {
		r = r.Clone()
		r.AddAttrs(slog.String(Key, id))
	}
	return h.inner.Handle(ctx, r)
}

func (h handler) WithAttrs(as []slog.Attr) slog.Handler { return handler{h.inner.WithAttrs(as)} }
func (h handler) WithGroup(name string) slog.Handler    { return handler{h.inner.WithGroup(name)} }
