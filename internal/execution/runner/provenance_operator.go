package runner

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/store"
)

// The operator's side of provenance: the only way a trusted input enters
// a context. No tool handler, transport or agent-supplied argument reaches
// these methods; a hosted agent's orchestrator gives the task through the
// operator's API (the CLI today) before it hands the context handle to the
// agent's MCP session.

// TaskInputID is the id of a context's task text among its trusted inputs.
const TaskInputID = "task"

// MaxTaskBytes bounds a task text (the store's bound on a trusted input).
const MaxTaskBytes = store.MaxTrustedInputBytes

// ErrTaskInvalid: a task text that is empty, not UTF-8 or too large.
var ErrTaskInvalid = errors.New("invalid task text")

// AddTask stores text as the trusted task input of context id (or of the
// context a session id names), once, and audits it: the record carries
// the task's SHA-256 and size, not the text.
func (o *Operator) AddTask(ctx context.Context, id, text, by, reason string) error {
	cx, err := o.lookup(ctx, id)
	if err != nil {
		return err
	}
	return o.addTask(ctx, cx, text, by, reason)
}

func (o *Operator) addTask(ctx context.Context, cx *Context, text, by, reason string) error {
	in := &store.TrustedInput{ContextID: cx.ID, ID: TaskInputID, Kind: "task", Text: text, AddedBy: "operator:" + by, CreatedAt: o.now().UTC()}
	err := checkTask(text)
	if err == nil {
		err = o.db.AddTrustedInput(ctx, in)
	}
	rec := &store.Record{Time: o.now().UTC(), ContextID: cx.ID, Principal: "operator:" + by, Transport: o.transport,
		Capability: "operator.context_task", Phase: cx.Phase, Decision: "allow", Outcome: "ok", Reason: reason,
		Extra: mustJSON(map[string]any{"input": TaskInputID, "sha256": in.SHA256, "bytes": len(text)})}
	if err != nil {
		rec.Decision, rec.Outcome, rec.Error = "deny", "error", err.Error()
	}
	if aerr := o.db.Append(ctx, rec); aerr != nil {
		return errors.Join(err, fmt.Errorf("auditing the task: %w", aerr))
	}
	return err
}

func checkTask(text string) error {
	switch {
	case text == "":
		return fmt.Errorf("empty: %w", ErrTaskInvalid)
	case len(text) > store.MaxTrustedInputBytes:
		return fmt.Errorf("%d bytes, at most %d: %w", len(text), store.MaxTrustedInputBytes, ErrTaskInvalid)
	case !utf8.ValidString(text):
		return fmt.Errorf("not UTF-8: %w", ErrTaskInvalid)
	}
	return nil
}

// ContextProvenance is what a context was given and has seen, for an
// operator (`airlock context show`).
func (o *Operator) ContextProvenance(ctx context.Context, id string) (*store.Provenance, error) {
	cx, err := o.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	return o.db.ContextProvenance(ctx, cx.ID)
}
