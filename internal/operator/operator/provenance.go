package operator

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/execution/provtrace"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/policy/redact"
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
func (o *API) AddTask(ctx context.Context, id, text, by, reason string) error {
	cx, err := o.lookup(ctx, id)
	if err != nil {
		return err
	}
	return o.addTask(ctx, cx, text, by, reason)
}

func (o *API) addTask(ctx context.Context, cx *Context, text, by, reason string) error {
	in := &store.TrustedInput{ContextID: cx.ID, ID: TaskInputID, Kind: "task", Text: text, AddedBy: "operator:" + by, CreatedAt: o.now().UTC()}
	err := checkTask(text)
	if err == nil {
		err = o.db.AddTrustedInput(ctx, in)
	}
	rec := audit.ContextTask(o.now().UTC(), o.operator(by), cx.ID, cx.Phase, reason,
		audit.Task{Input: TaskInputID, SHA256: in.SHA256, Bytes: len(text)}, err)
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
func (o *API) ContextProvenance(ctx context.Context, id string) (*store.Provenance, error) {
	cx, err := o.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	return o.db.ContextProvenance(ctx, cx.ID)
}

// NeedProvenance recomputes the provenance of a declaration's arguments
// from the store (its context and the context's ancestors), as the
// approval question shows it. A need with nothing to trace has none.
func (o *API) NeedProvenance(ctx context.Context, d *Declaration) ([]toolkit.ArgOrigin, error) {
	return provtrace.Need(ctx, o.db, d)
}

// endorser is an endorsement on the operator's word.
func (o *API) endorser(ctx context.Context, by, reason string) (*provtrace.Endorser, error) {
	key, err := o.db.Key(ctx, "redaction")
	if err != nil {
		return nil, fmt.Errorf("loading the redaction key: %w", err)
	}
	return &provtrace.Endorser{DB: o.db, Hash: redact.New(key).Hash, Now: o.now, Transport: o.transport, By: "operator:" + by, Reason: reason}, nil
}

// ApproveAndEndorse approves a declared need (as Approve) and then
// endorses, in its context only, the values of its arguments that came
// from untrusted content or from the agent: later needs of the context
// using them are not asked about again. A need with nothing to endorse is
// still approved (the error says so, wrapping provtrace.ErrNothingToEndorse).
func (o *API) ApproveAndEndorse(ctx context.Context, id, by, reason string) (*Declaration, []*store.Endorsement, error) {
	e, err := o.endorser(ctx, by, reason)
	if err != nil {
		return nil, nil, err
	}
	d, err := o.decide(ctx, id, by, reason, true)
	if err != nil {
		return nil, nil, err
	}
	rows, err := e.Need(ctx, d)
	if err != nil {
		return d, rows, fmt.Errorf("declaration %s approved, endorsement failed: %w", d.ID, err)
	}
	return d, rows, nil
}

// Endorse vouches for value up front in the context id names (a context
// or session id): an orchestrator that knows a value is right ("the
// landlord's IBAN is …") before the agent uses it. Audited.
func (o *API) Endorse(ctx context.Context, id, value, by, reason string) (*store.Endorsement, error) {
	cx, err := o.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	e, err := o.endorser(ctx, by, reason)
	if err != nil {
		return nil, err
	}
	if value == "" || len(value) > store.MaxEndorsementBytes {
		return nil, fmt.Errorf("a value of %d bytes, want 1 to %d: %w", len(value), store.MaxEndorsementBytes, store.ErrProvenanceInvalid)
	}
	rows, err := e.Values(ctx, cx.ID, "", []provtrace.Value{{Arg: "value", Value: value}}, nil)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return &store.Endorsement{ContextID: cx.ID, ID: provtrace.EndorsementID(value), Value: value}, nil // endorsed before
	}
	return rows[0], nil
}

// ErrNothingToEndorse: a need with no untrusted or agent-written value to
// vouch for (it is still approved).
var ErrNothingToEndorse = provtrace.ErrNothingToEndorse
