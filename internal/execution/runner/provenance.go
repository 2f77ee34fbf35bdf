package runner

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/policy"
	"github.com/airlock-dev/airlock/internal/provenance"
	"github.com/airlock-dev/airlock/sources"
	"github.com/airlock-dev/airlock/store"
	"github.com/airlock-dev/airlock/tools"
)

// Provenance at the boundary (issue 22), the runner's part:
//
//   - Labels: every result handed to the agent that Airlock did not write
//     (fenced untrusted content: a fetch, an upstream tool's answer, an
//     untrusted pool's page, a pipeline's output; and a trusted pool's
//     page) is recorded in the context's provenance in the store before
//     the response leaves ([call.recordSeen], from finish). A label that
//     cannot be recorded withholds the response (fail closed): content
//     the agent saw but the store does not know would let its values pass
//     as the agent's own.
//   - Trace: a declare_need's arguments — the upstream tool's arguments of
//     a comm.mcp need, the url of a comm.fetch, the query of a comm.search
//     or comm.query — are traced at step 5 against the context's trusted
//     inputs, labels and endorsements ([call.traceNeed]); the result is
//     policy.Input.Provenance, and its summary goes into the call's audit
//     record ([call.auditProvenance]).
//
// Trusted is narrow on purpose. Only the operator's side adds a trusted
// input ([Operator.AddTrustedInput]); a page read from a configured pool
// whose trust is trusted is a trusted label; everything else the agent is
// handed is untrusted, including the outputs of a pipeline run over
// trusted pools: its parameters are the agent's, so a trusted output pool
// could launder an untrusted value into a trusted one
// (TestAgentCannotCreateTrustedInput).

// DefaultMaxProvenanceBytes is the per-context cap on recorded content
// text when the configuration sets none.
const DefaultMaxProvenanceBytes = 4 << 20

// maxAuditSources bounds the sources named per argument in a record, and
// maxAuditArgs the arguments.
const (
	maxAuditSources = 8
	maxAuditArgs    = 64
)

// seen is what a call handed the agent that needs a label.
type seen struct {
	kind, source, integrity, text string
}

// saw notes content the response carries, for recordSeen; render calls
// it once the content is final (truncated and fenced).
func (c *call) saw(p *toolkit.Provenance, text, attributionID string, audit map[string]any) {
	s := &seen{kind: p.Kind, source: p.Source, integrity: store.IntegrityUntrusted, text: text}
	if attributionID != "" {
		s.source = attributionID
	}
	if sha, ok := audit["sha256"].(string); ok && sha != "" && attributionID == "" {
		s.source += "#" + sha
	}
	if p.Trust == string(sources.Trusted) && c.configuredPool(p.Source) {
		s.integrity = store.IntegrityTrusted
	}
	c.seen = append(c.seen, s)
}

// configuredPool reports whether a pool file URI names a pool the
// operator configured for the context (not a pool a call derived).
func (c *call) configuredPool(uri string) bool {
	pool, _, ok := sources.ParseFileURI(uri)
	return ok && len(c.chain) > 0 && slices.Contains(c.chain[0].Pools, pool)
}

// recordSeen stores the labels of what resp hands the agent; if one
// cannot be stored the response is withheld.
func (c *call) recordSeen(ctx context.Context, resp *Response) *Response {
	if resp.IsError || len(c.seen) == 0 {
		return resp
	}
	max := c.s.r.Config().Server.MaxProvenanceBytes
	if max <= 0 {
		max = DefaultMaxProvenanceBytes
	}
	var labels []map[string]any
	for _, s := range c.seen {
		l := &store.ContentLabel{ContextID: c.s.contextID, Source: store.CutSource(s.source), Kind: store.CutSource(s.kind),
			Integrity: s.integrity, Text: s.text, CreatedAt: c.start}
		evicted, err := c.s.r.db.RecordContent(context.WithoutCancel(ctx), l, max)
		if err != nil {
			return c.boundError(violation.Wrap(violation.Unavailable, err, "the provenance of this result cannot be recorded; it is withheld"))
		}
		labels = append(labels, map[string]any{"seq": l.Seq, "source": l.Source, "integrity": l.Integrity,
			"sha256": l.SHA256, "bytes": l.Bytes, "evicted": evicted})
	}
	c.rec.Extra = mergeExtra(c.rec.Extra, "labels", labels)
	return resp
}

// traceNeed computes the provenance of a declared need's arguments for
// the policy (step 5). Any other call has none. A store that cannot be
// read refuses the call: a decision that may hinge on provenance is not
// made without it.
func (c *call) traceNeed(ctx context.Context, args toolkit.Args, in *policy.Input) error {
	a, ok := args.(*tools.DeclareNeedArgs)
	if !ok || a.Parameters == nil {
		return nil
	}
	if _, ok := tracedValues(a); !ok {
		return nil
	}
	// The context and its ancestors (provenance_chain.go).
	p, err := chainProvenance(ctx, c.s.r.db, chainIDs(c.chain))
	if err != nil {
		return violation.Wrap(violation.Unavailable, err, "the provenance of this context cannot be read")
	}
	c.traced, in.Provenance = traceArgs(p, a)
	return nil
}

// tracedValues are the values of a need that the agent chose and that
// leave Airlock: the upstream tool's arguments, the URL, the query.
func tracedValues(a *tools.DeclareNeedArgs) (any, bool) {
	p := a.Parameters
	switch a.Operation {
	case declarations.OpMCP:
		var v any
		if len(p.Arguments) == 0 || json.Unmarshal(p.Arguments, &v) != nil {
			return nil, false
		}
		return v, true
	case declarations.OpFetch:
		return map[string]any{"url": p.URL}, true
	case declarations.OpSearch, declarations.OpQuery:
		return map[string]any{"query": p.Query}, true
	}
	return nil, false
}

// indexSources turns a context's provenance into the matcher's sources:
// trusted inputs and endorsements are trusted, content as labelled.
func indexSources(p *store.Provenance) []provenance.Source {
	var out []provenance.Source
	for _, in := range p.Inputs {
		out = append(out, provenance.Source{ID: in.ID, Integrity: provenance.Trusted, Readers: in.Readers, Text: in.Text})
	}
	for _, e := range p.Endorsements {
		out = append(out, provenance.Source{ID: endorsementPrefix + e.ID, Integrity: provenance.Trusted, Text: e.Value})
	}
	for _, l := range p.Content {
		if l.Evicted {
			continue
		}
		integrity := provenance.Untrusted
		if l.Integrity == store.IntegrityTrusted {
			integrity = provenance.Trusted
		}
		out = append(out, provenance.Source{ID: l.Source, Integrity: integrity, Readers: l.Readers, Text: l.Text})
	}
	return out
}

const endorsementPrefix = "endorsement:"

// argProvenance is the policy's view of one traced argument: endorsed
// when only endorsements explain a trusted value; untrusted, not agent,
// when the context evicted untrusted text (it might have come from it).
func argProvenance(t provenance.Argument, evictedUntrusted bool) policy.ArgProvenance {
	a := policy.ArgProvenance{Origin: string(t.Origin), Kind: string(t.Kind), Readers: t.Readers}
	endorsed, principal := false, false
	for _, m := range t.Matches {
		if len(a.Sources) < maxAuditSources && !slices.Contains(a.Sources, m.Source) {
			a.Sources = append(a.Sources, m.Source)
		}
		if m.How == provenance.HowExact && m.Integrity == provenance.Trusted {
			if strings.HasPrefix(m.Source, endorsementPrefix) {
				endorsed = true
			} else {
				principal = true
			}
		}
	}
	endorsedOnly := endorsed && !principal
	switch {
	case t.Origin == provenance.OriginTrusted && endorsedOnly:
		a.Origin = policy.OriginEndorsed
	case t.Origin == provenance.OriginAgent && evictedUntrusted:
		a.Origin = policy.OriginUntrusted
		a.Sources = append(a.Sources, "evicted")
	}
	return a
}

// argName is a JSON pointer as a policy names it: "/recipient" is
// "recipient", "/items/0/iban" is "items.0.iban".
func argName(pointer string) string {
	parts := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	for i, p := range parts {
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
	}
	return strings.Join(parts, ".")
}

// auditProvenance puts the traced arguments' labels into the call's
// record: name, origin, kind, matched sources (bounded) and an HMAC of the
// value (the record's arguments are redacted the same way), so `audit
// verify` covers why a value was allowed to flow.
func (c *call) auditProvenance() {
	if c.input == nil || c.input.Provenance == nil {
		return
	}
	var out []map[string]any
	for _, t := range c.traced {
		if len(out) == maxAuditArgs {
			break
		}
		name := argName(t.Path)
		a := c.input.Provenance[name]
		e := map[string]any{"arg": name, "origin": a.Origin, "kind": a.Kind, "sources": a.Sources,
			"value_hmac": c.s.r.redactor.Hash(t.Value)}
		if a.Readers != nil {
			e["readers"] = a.Readers
		}
		if t.Truncated {
			e["truncated"] = true
		}
		out = append(out, e)
	}
	c.rec.Extra = mergeExtra(c.rec.Extra, "provenance", out)
}

// denyCode is the violation of a policy deny: PROVENANCE_DENIED when the
// deciding rule reads provenance.
func (c *call) denyCode(dec policy.Decision) violation.Code {
	if c.policy.UsesProvenance(dec.RuleID) {
		return violation.ProvenanceDenied
	}
	return violation.PolicyDenied
}

// mergeExtra sets key in a record's extra JSON object (nil: a new one).
func mergeExtra(extra json.RawMessage, key string, v any) json.RawMessage {
	m := map[string]json.RawMessage{}
	if len(extra) > 0 && json.Unmarshal(extra, &m) != nil {
		m = map[string]json.RawMessage{"extra": extra}
	}
	m[key] = mustJSON(v)
	return mustJSON(m)
}
