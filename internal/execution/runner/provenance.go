package runner

import (
	"context"
	"net/url"
	"slices"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/execution/provtrace"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/policy"
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
// Readers (who may see the content; nil is public) come from the
// operator's configuration only: a pool's page carries its pool's
// readers, a pipeline's output the meet of its inputs' (tools), an
// upstream's answer its upstream's ([call.readersOf]).
//
// Trusted is narrow on purpose. Only the operator's side adds a trusted
// input (operator.API.AddTask); a page read from a configured pool
// whose trust is trusted is a trusted label; everything else the agent is
// handed is untrusted, including the outputs of a pipeline run over
// trusted pools: its parameters are the agent's, so a trusted output pool
// could launder an untrusted value into a trusted one
// (TestAgentCannotCreateTrustedInput).

// DefaultMaxProvenanceBytes is the per-context cap on recorded content
// text when the configuration sets none.
const DefaultMaxProvenanceBytes = 4 << 20

// maxAuditArgs bounds the arguments named in a record (the sources per
// argument are bounded by provtrace.MaxSources).
const maxAuditArgs = 64

// seen is what a call handed the agent that needs a label.
type seen struct {
	kind, source, integrity, text string
	readers                       []string // nil: public
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
	s.readers = c.readersOf(p)
	c.seen = append(c.seen, s)
}

// readersOf is who may see content of provenance p: a pool's page (and a
// pipeline's output) carries the readers the tool took from the pool's
// configuration; an upstream's answer those of the configured upstream,
// looked up here from the source the runner itself wrote (upstream.Source).
// Both when they apply meet; nil is public.
func (c *call) readersOf(p *toolkit.Provenance) []string {
	readers := p.Readers
	if p.Kind == string(declarations.OpMCP) {
		if u, err := url.Parse(p.Source); err == nil && u.Scheme == "mcp" {
			if up, ok := c.s.r.Config().Upstream(u.Host); ok {
				readers = sources.MeetReaders(readers, up.Readers)
			}
		}
	}
	return slices.Clone(readers)
}

// configuredPool reports whether a pool file URI names a pool the
// operator configured for the context (not a pool a call derived).
func (c *call) configuredPool(uri string) bool {
	pool, _, ok := sources.ParseFileURI(uri)
	return ok && len(c.chain) > 0 && slices.Contains(c.chain[0].Pools, pool)
}

// recordSeen checks the labels of what resp hands the agent, for the
// store to record with the call's record (finish: AppendLabelled); if one
// cannot be stored the response is withheld.
func (c *call) recordSeen(resp *Response) *Response {
	if resp.IsError || len(c.seen) == 0 {
		return resp
	}
	c.labels = &store.Labels{MaxBytes: c.s.r.Config().Server.MaxProvenanceBytes}
	if c.labels.MaxBytes <= 0 {
		c.labels.MaxBytes = DefaultMaxProvenanceBytes
	}
	for _, s := range c.seen {
		l := &store.ContentLabel{ContextID: c.s.contextID, Source: store.CutSource(s.source), Kind: store.CutSource(s.kind),
			Integrity: s.integrity, Readers: s.readers, Text: s.text, CreatedAt: c.start}
		if err := store.CheckLabel(l, c.labels.MaxBytes); err != nil {
			c.labels = nil
			return c.boundError(violation.Wrap(violation.Unavailable, err, "the provenance of this result cannot be recorded; it is withheld"))
		}
		c.labels.List = append(c.labels.List, l)
	}
	return resp
}

// traceNeed computes the provenance of a declared need's arguments for
// the policy (step 5). Any other call has none. A store that cannot be
// read refuses the call: a decision that may hinge on provenance is not
// made without it.
func (c *call) traceNeed(ctx context.Context, args toolkit.Args, in *policy.Input) error {
	a, ok := args.(*tools.DeclareNeedArgs)
	if !ok || !provtrace.Traced(a.Operation, a.Parameters) {
		return nil
	}
	p, err := provtrace.Chain(ctx, c.s.r.db, chainIDs(c.chain)) // the context and its ancestors
	if err != nil {
		return violation.Wrap(violation.Unavailable, err, "the provenance of this context cannot be read")
	}
	c.traced, in.Provenance = provtrace.Trace(p, a.Operation, a.Parameters, &c.s.r.analyses)
	return nil
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
		name := provtrace.ArgName(t.Path)
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
	c.rec.Extra = audit.MergeExtra(c.rec.Extra, "provenance", out)
}

// denyCode is the violation of a policy deny: PROVENANCE_DENIED when the
// deciding rule reads provenance.
func (c *call) denyCode(dec policy.Decision) violation.Code {
	if c.policy.UsesProvenance(dec.RuleID) {
		return violation.ProvenanceDenied
	}
	return violation.PolicyDenied
}
