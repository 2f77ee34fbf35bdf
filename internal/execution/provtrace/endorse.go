package provtrace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/policy/policy"
	"github.com/airlock-dev/airlock/store"
)

// Endorsement (issue 22 item 5): the configured approver vouches for a
// value once, in one context, and later needs of that context using it
// trace as "endorsed" and pass a rule such as
//
//	when: provenance.recipient.origin in ["untrusted", "agent"] → require_approval
//
// without asking again. The invariant:
//
//   - approver-only: an [Endorser] is made by the operator's API (the CLI,
//     the console, the operator HTTP endpoint) or by the runner for the
//     person at the client answering a server-minted, single-use approval
//     question, only where the role names the client as the approver. A
//     forged, replayed or misdirected answer is refused before anything is
//     endorsed (TestEndorseRefusedFromNonApprover);
//   - single-context: the row is bound to the declaration's context, and
//     [Chain] reads only the context's own endorsements
//     (TestEndorsementSingleContext);
//   - audited: one "context.endorse" record per act, in the hash chain,
//     with the context, the declaration, each argument's name and the HMAC
//     of its value (never the value), who and why (TestEndorsementAudited).

// EndorseCapability is the capability of an endorsement's audit record.
const EndorseCapability = string(audit.KindEndorse)

// ErrNothingToEndorse: a need whose arguments are all trusted already, or
// none of whose values can be endorsed (cut, too long).
var ErrNothingToEndorse = errors.New("nothing to endorse")

// endorsable are the origins an endorsement vouches for.
var endorsable = []string{policy.OriginUntrusted, policy.OriginAgent}

// Endorser is one endorsement act: who, where, over which values.
type Endorser struct {
	DB        *store.DB
	Hash      func(string) string // the audit's value HMAC
	Now       func() time.Time
	Transport string
	By        string // "operator:alice", "elicitation:alice"
	Reason    string
}

// Value is one value to endorse and the argument it was found in.
type Value struct{ Arg, Value string }

// Need endorses d's untrusted and agent-written argument values in d's
// context, as traced now against the context and its ancestors, and
// audits the act (even when it fails).
func (e *Endorser) Need(ctx context.Context, d *declarations.Declaration) ([]*store.Endorsement, error) {
	args, err := Need(ctx, e.DB, d)
	if err != nil {
		return nil, err
	}
	var (
		vals    []Value
		skipped []audit.SkippedValue
	)
	for _, a := range args {
		switch {
		case !slices.Contains(endorsable, a.Origin):
		case a.Truncated || a.Value == "" || len(a.Value) > store.MaxEndorsementBytes:
			// A value cut before tracing is not the value the need
			// carries; vouching for its prefix would vouch for a different
			// value.
			skipped = append(skipped, audit.SkippedValue{Arg: a.Name, Why: "cut or too long"})
		default:
			vals = append(vals, Value{Arg: a.Name, Value: a.Value})
		}
	}
	return e.Values(ctx, d.ContextID, d.ID, vals, skipped)
}

// Values stores vals as endorsements of contextID (declID names the need
// they came from, "" for none) and audits the act.
func (e *Endorser) Values(ctx context.Context, contextID, declID string, vals []Value, skipped []audit.SkippedValue) ([]*store.Endorsement, error) {
	var (
		out []*store.Endorsement
		act = audit.Endorsement{DeclarationID: declID, Skipped: skipped}
		err error
	)
	if len(vals) == 0 {
		err = ErrNothingToEndorse
	}
	have := map[string]bool{}
	if p, perr := e.DB.ContextProvenance(ctx, contextID); perr != nil {
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
		row := &store.Endorsement{ContextID: contextID, ID: EndorsementID(v.Value), Value: v.Value, By: e.By, Reason: e.Reason}
		entry := audit.EndorsedValue{Arg: v.Arg, ID: row.ID, ValueHMAC: e.Hash(v.Value)}
		if have[row.ID] {
			entry.Already = true // the same value twice in one need, or endorsed before
		} else if err = e.DB.AddEndorsement(ctx, row); err == nil {
			have[row.ID] = true
			out = append(out, row)
		}
		act.Values = append(act.Values, entry)
	}
	rec := audit.Endorse(e.Now().UTC(), e.By, e.Transport, contextID, e.Reason, act, err)
	if aerr := e.DB.Append(context.WithoutCancel(ctx), rec); aerr != nil {
		return nil, errors.Join(err, fmt.Errorf("auditing the endorsement: %w", aerr))
	}
	return out, err
}

// EndorsementID names an endorsement by its value, so the same value is
// endorsed once per context.
func EndorsementID(v string) string {
	sum := sha256.Sum256([]byte(v))
	return "v_" + hex.EncodeToString(sum[:12])
}
