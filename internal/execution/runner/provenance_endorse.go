package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/policy"
	"github.com/airlock-dev/airlock/internal/policy/redact"
	"github.com/airlock-dev/airlock/store"
)

// Endorsement (issue 22 item 5): the configured approver vouches for a
// value once, in one context, and later needs of that context using it
// trace as "endorsed" (provenance.go) and pass a rule such as
//
//	when: provenance.recipient.origin in ["untrusted", "agent"] → require_approval
//
// without asking again. The invariant, kept here and nowhere else:
//
//   - approver-only: an endorsement is written by the operator
//     ([Operator.ApproveAndEndorse], [Operator.Endorse]: the CLI, the
//     console, the operator HTTP endpoint) or by the person at the client
//     answering a server-minted, single-use approval question, only where
//     the role names the client as the approver (approvals.Endorse, called
//     by declare_need after expandDeclaration and Redeem checked all
//     three). A forged, replayed or misdirected answer is refused before
//     anything is endorsed (TestEndorseRefusedFromNonApprover);
//   - single-context: the row is bound to the declaration's context, and
//     the tracer reads only the context's own endorsements, never an
//     ancestor's or a child's (provenance_chain.go,
//     TestEndorsementSingleContext);
//   - audited: one "context.endorse" record per endorsement act, in the
//     hash chain, with the context, the declaration, each argument's name
//     and the HMAC of its value (never the value), who and why
//     (TestEndorsementAudited).

// EndorseCapability is the capability of an endorsement's audit record.
const EndorseCapability = "context.endorse"

// ErrNothingToEndorse: a need whose arguments are all trusted already, or
// none of whose values can be endorsed (cut, too long).
var ErrNothingToEndorse = errors.New("nothing to endorse")

// endorsable are the origins an endorsement vouches for.
var endorsable = []string{policy.OriginUntrusted, policy.OriginAgent}

// endorsement is one endorsement act: who, where, over which arguments.
type endorsement struct {
	db        *store.DB
	hash      func(string) string // the audit's value HMAC
	now       func() time.Time
	transport string
	by        string // "operator:alice", "elicitation:alice"
	reason    string
}

// need endorses d's untrusted and agent-written argument values in d's
// context, as traced now against the context and its ancestors, and
// audits the act (even when it fails).
func (e *endorsement) need(ctx context.Context, d *Declaration) ([]*store.Endorsement, error) {
	ids, err := ancestry(ctx, e.db, d.ContextID)
	if err != nil {
		return nil, fmt.Errorf("declaration %s: %w", d.ID, err)
	}
	p, err := chainProvenance(ctx, e.db, ids)
	if err != nil {
		return nil, fmt.Errorf("declaration %s: %w", d.ID, err)
	}
	var (
		vals    []endorsedValue
		skipped []map[string]any
	)
	for _, a := range needArguments(traceArgs(p, declarationArgs(d))) {
		switch {
		case !slices.Contains(endorsable, a.Origin):
		case a.Truncated || a.Value == "" || len(a.Value) > store.MaxEndorsementBytes:
			// A value cut before tracing is not the value the need
			// carries; vouching for its prefix would vouch for a different
			// value.
			skipped = append(skipped, map[string]any{"arg": a.Name, "why": "cut or too long"})
		default:
			vals = append(vals, endorsedValue{arg: a.Name, value: a.Value})
		}
	}
	return e.values(ctx, d.ContextID, d.ID, vals, skipped)
}

type endorsedValue struct{ arg, value string }

// values stores vals as endorsements of contextID and audits the act.
func (e *endorsement) values(ctx context.Context, contextID, declID string, vals []endorsedValue, skipped []map[string]any) ([]*store.Endorsement, error) {
	var (
		out     []*store.Endorsement
		entries []map[string]any
		err     error
	)
	if len(vals) == 0 {
		err = ErrNothingToEndorse
	}
	have := map[string]bool{}
	if p, perr := e.db.ContextProvenance(ctx, contextID); perr != nil {
		err = perr
	} else {
		for _, x := range p.Endorsements {
			have[x.ID] = true
		}
	}
	for _, v := range vals {
		if err != nil {
			break
		}
		row := &store.Endorsement{ContextID: contextID, ID: endorsementID(v.value), Value: v.value, By: e.by, Reason: e.reason}
		entry := map[string]any{"arg": v.arg, "id": row.ID, "value_hmac": e.hash(v.value)}
		if have[row.ID] {
			entry["already"] = true // the same value twice in one need, or endorsed before
		} else if err = e.db.AddEndorsement(ctx, row); err == nil {
			have[row.ID] = true
			out = append(out, row)
		}
		entries = append(entries, entry)
	}
	extra := map[string]any{"endorsed": entries}
	if declID != "" {
		extra["declaration_id"] = declID
	}
	if skipped != nil {
		extra["skipped"] = skipped
	}
	rec := &store.Record{Time: e.now().UTC(), ContextID: contextID, Principal: e.by, Transport: e.transport,
		Capability: EndorseCapability, Decision: "allow", Outcome: "ok", Reason: e.reason, Extra: mustJSON(extra)}
	if err != nil {
		rec.Decision, rec.Outcome, rec.Error = "deny", "error", err.Error()
	}
	if aerr := e.db.Append(context.WithoutCancel(ctx), rec); aerr != nil {
		return nil, errors.Join(err, fmt.Errorf("auditing the endorsement: %w", aerr))
	}
	return out, err
}

// endorsementID names an endorsement by its value, so the same value is
// endorsed once per context.
func endorsementID(v string) string {
	sum := sha256.Sum256([]byte(v))
	return "v_" + hex.EncodeToString(sum[:12])
}

// operatorEndorsement is an endorsement on the operator's word.
func (o *Operator) operatorEndorsement(ctx context.Context, by, reason string) (*endorsement, error) {
	key, err := o.db.Key(ctx, "redaction")
	if err != nil {
		return nil, fmt.Errorf("loading the redaction key: %w", err)
	}
	return &endorsement{db: o.db, hash: redact.New(key).Hash, now: o.now, transport: o.transport, by: "operator:" + by, reason: reason}, nil
}

// ApproveAndEndorse approves a declared need (as Approve) and then
// endorses, in its context only, the values of its arguments that came
// from untrusted content or from the agent: later needs of the context
// using them are not asked about again. A need with nothing to endorse is
// still approved (the error says so, wrapping ErrNothingToEndorse).
func (o *Operator) ApproveAndEndorse(ctx context.Context, id, by, reason string) (*Declaration, []*store.Endorsement, error) {
	e, err := o.operatorEndorsement(ctx, by, reason)
	if err != nil {
		return nil, nil, err
	}
	d, err := o.decide(ctx, id, by, reason, true)
	if err != nil {
		return nil, nil, err
	}
	rows, err := e.need(ctx, d)
	if err != nil {
		return d, rows, fmt.Errorf("declaration %s approved, endorsement failed: %w", d.ID, err)
	}
	return d, rows, nil
}

// Endorse vouches for value up front in the context id names (a context
// or session id): an orchestrator that knows a value is right ("the
// landlord's IBAN is …") before the agent uses it. Audited.
func (o *Operator) Endorse(ctx context.Context, id, value, by, reason string) (*store.Endorsement, error) {
	cx, err := o.lookup(ctx, id)
	if err != nil {
		return nil, err
	}
	e, err := o.operatorEndorsement(ctx, by, reason)
	if err != nil {
		return nil, err
	}
	if value == "" || len(value) > store.MaxEndorsementBytes {
		return nil, fmt.Errorf("a value of %d bytes, want 1 to %d: %w", len(value), store.MaxEndorsementBytes, store.ErrProvenanceInvalid)
	}
	rows, err := e.values(ctx, cx.ID, "", []endorsedValue{{arg: "value", value: value}}, nil)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return &store.Endorsement{ContextID: cx.ID, ID: endorsementID(value), Value: value}, nil // endorsed before
	}
	return rows[0], nil
}

// Provenance implements toolkit.Approvals: the arguments step 5 traced
// (the declaration's own, once expanded).
func (a *approvals) Provenance(d *declarations.Declaration) []toolkit.ArgOrigin {
	if a.c.input == nil || a.c.traced == nil {
		return nil
	}
	return needArguments(a.c.traced, a.c.input.Provenance)
}

// Endorse implements toolkit.Approvals: the person at the client, having
// answered this server's question about d, vouches for d's values.
func (a *approvals) Endorse(ctx context.Context, d *declarations.Declaration, reason string) error {
	if d.ContextID != a.c.s.contextID {
		// Get already refused another context's declaration; this is the
		// invariant restated where it is relied on.
		return violation.New(violation.ApprovalInvalid, "declaration %s is not in this context", d.ID)
	}
	r := a.c.s.r
	e := &endorsement{db: r.db, hash: r.redactor.Hash, now: r.now,
		transport: a.c.s.transport, by: "elicitation:" + a.c.s.principal, reason: reason}
	if _, err := e.need(ctx, d); err != nil && !errors.Is(err, ErrNothingToEndorse) {
		return violation.Wrap(violation.Unavailable, err, "the endorsement cannot be recorded")
	}
	return nil
}
