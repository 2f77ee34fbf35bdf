package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/airlock-dev/airlock/attribution"
	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/fence"
	"github.com/airlock-dev/airlock/internal/audit/audit"
	"github.com/airlock-dev/airlock/internal/execution/toolkit"
	"github.com/airlock-dev/airlock/internal/kit/rawjson"
	"github.com/airlock-dev/airlock/internal/kit/textcut"
	"github.com/airlock-dev/airlock/internal/kit/violation"
	"github.com/airlock-dev/airlock/internal/policy/limits"
	"github.com/airlock-dev/airlock/internal/policy/redact"
	"github.com/airlock-dev/airlock/store"
)

// finish runs what follows the handler: steps 10-13 (bound the error,
// truncate, fence, audit) and the call's close.
func (c *call) finish(ctx context.Context, res *toolkit.Result, err error) *Response {
	c.rec.DurationMicros = c.s.r.now().Sub(c.start).Microseconds()
	// step: after the handler
	if err == nil && res != nil && res.Pending != nil {
		c.s.r.notifyPending(c.s, res.Pending)
	}
	if err == nil && res != nil && res.Derived != nil {
		// The outputs exist whatever happens here; if the pool cannot be
		// registered the agent is told so and the audit keeps the cause.
		if derr := c.s.r.derived.Add(ctx, c.s.contextID, res.Derived); derr != nil {
			c.log.Error("registering a run's output pool", "context", c.s.contextID, "pool", res.Derived.ID, "err", derr)
			c.rec.Error = errorText(derr.Error())
			res.Text += "(The output pool could not be registered; the outputs are kept on the server.)\n"
		}
	}
	// step: 10. bound the error — an error ends here (boundError); a
	// result goes on to 11 and 12 (render).
	// step: 11. truncate
	// step: 12. fence
	var resp *Response
	if err != nil {
		resp = c.boundError(err)
	} else {
		resp = c.render(res)
	}
	// step: labels — what the agent is handed is recorded in its context,
	// with its source and integrity (provenance.go), and each traced
	// argument's provenance joins the record.
	resp = c.recordSeen(resp)
	c.auditProvenance()
	// step: 13. audit — durable before the response leaves. Use a context
	// that outlives a cancelled call: a call the client abandoned is still
	// recorded.
	c.auditStart = time.Now()
	aerr := c.appendRecord(context.WithoutCancel(ctx), res)
	if errors.Is(aerr, store.ErrMoveRefused) {
		// The declaration's end could not be stored with the record:
		// the call is answered as failed and recorded so, without the
		// content it would have handed over.
		resp, c.labels = c.boundError(aerr), nil
		aerr = c.appendRecord(context.WithoutCancel(ctx), nil)
	}
	// step: close — the log line, then (deferred) the metrics and the span.
	defer c.observe(time.Now())
	if aerr != nil {
		c.log.Error("audit append failed; refusing call", "session", c.s.id, "tool", c.rec.Tool, "err", aerr)
		c.rec.Outcome, c.rec.Violation = audit.OutcomeError, string(violation.AuditUnavailable)
		c.logLine()
		return &Response{IsError: true, Code: violation.AuditUnavailable,
			Text: violation.New(violation.AuditUnavailable, "the audit trail cannot be written; call refused").Public()}
	}
	resp.AuditSeq = c.rec.Seq
	c.logLine()
	return resp
}

// appendRecord is step 13's commit: the record, the labels of what the
// agent is handed and, when the handler ended a declaration's execution,
// that end (res.Finish), in one transaction.
func (c *call) appendRecord(ctx context.Context, res *toolkit.Result) error {
	var finish *declarations.Move
	if res != nil {
		finish = res.Finish
	}
	return c.s.r.db.AppendCall(ctx, c.rec, c.labels, finish)
}

// logLine is the call's one info line: who, where, what was decided and
// how it ended, and the audit seq to find the full record. It carries ids,
// names and codes only — never an argument value, a reason or an error
// text, which may quote what the agent sent (SECURITY.md, "logs";
// TestServeLogsOneJSONLinePerCall). An unknown tool's agent-chosen name
// is not logged either.
func (c *call) logLine() {
	tool := "(unknown)"
	if c.tool.Name != "" {
		tool = c.tool.Name
	}
	// Typed attributes: an untyped value went through fmt on every call (issue 27).
	attrs := append(make([]slog.Attr, 0, 12), slog.String("context", c.s.contextID), slog.String("session", c.s.id), slog.String("principal", c.s.principal),
		slog.String("tool", tool), slog.String("capability", c.rec.Capability), slog.String("decision", c.rec.Decision),
		slog.String("rule", c.rec.RuleID), slog.String("outcome", string(c.rec.Outcome)),
		slog.Float64("duration_ms", float64(c.rec.DurationMicros)/1000))
	if c.rec.Violation != "" {
		attrs = append(attrs, slog.String("violation", c.rec.Violation))
	}
	if c.rec.ErrorRef != "" {
		attrs = append(attrs, slog.String("ref", c.rec.ErrorRef))
	}
	if c.rec.Seq != 0 {
		attrs = append(attrs, slog.Int64("audit_seq", c.rec.Seq))
	}
	c.log.LogAttrs(context.Background(), slog.LevelInfo, "call", attrs...)
}

// boundError is step 10: the agent sees a violation code and a message
// written for it; the full error goes to the log and the audit record only.
func (c *call) boundError(err error) *Response {
	var v *violation.Error
	if !errors.As(err, &v) {
		ref := newRef()
		v = violation.Wrap(violation.Internal, err, "internal error (ref %s)", ref)
		c.rec.ErrorRef = ref
		c.log.Error("tool call failed", "ref", ref, "session", c.s.id, "tool", c.rec.Tool, "err", err)
	}
	c.rec.Violation = string(v.Code)
	c.rec.Outcome = audit.OutcomeOf(v.Code)
	if v.Err != nil {
		// A transport error quotes the URL it failed on; a credential in
		// its query is hashed like one in the arguments (issue 10, item 3).
		c.rec.Error = errorText(redact.Query(v.Err.Error(), c.s.r.redactor.Hash))
	}
	if c.rec.Reason == "" {
		c.rec.Reason = v.Message
	}
	detail := map[string]any{"code": v.Code, "message": v.Message, "ref": c.rec.ErrorRef}
	// LIMIT_EXCEEDED says which limit, and for a rate when to retry, so a
	// client can back off without parsing the message.
	var ex *limits.ExceededError
	if errors.As(err, &ex) {
		detail["limit"] = ex.Limit
		if ex.Pattern != "" {
			detail["pattern"] = ex.Pattern
		}
		if ex.RetryAfter > 0 {
			detail["retry_after_ms"] = ex.RetryAfter.Milliseconds()
		}
	}
	return &Response{IsError: true, Code: v.Code, Text: v.Public(), Structured: map[string]any{"error": detail}}
}

// render is steps 11 and 12: truncate to the configured size, then fence
// untrusted text — in that order, so truncation can never cut off the fence's
// closing marker. Airlock's own text comes first and is never fenced.
func (c *call) render(res *toolkit.Result) *Response {
	max := c.s.r.Config().Server.MaxOutputBytes
	if res.Exact && (len(res.Text) > max || (res.Untrusted != nil && len(res.UntrustedText) > max-len(res.Text))) {
		return c.boundError(fmt.Errorf("%d+%d bytes, limit %d: %w", len(res.Text), len(res.UntrustedText), max, errExactTooLarge))
	}
	text, truncated := textcut.Marked(res.Text, max)
	resp := &Response{Text: text, Blobs: res.Blobs, Structured: res.Structured, Truncated: truncated, Elicit: res.Elicit}
	if res.Untrusted != nil {
		untrusted, cut := textcut.Marked(res.UntrustedText, max-len(text))
		meta := fence.Meta{Source: res.Untrusted.Source, Kind: res.Untrusted.Kind, Trust: res.Untrusted.Trust, Scrub: res.Untrusted.Scrub}
		if res.Untrusted.Attribute {
			meta.AttributionID = "att_" + uuid.NewString()
		}
		f, err := fence.Wrap([]byte(untrusted), meta)
		if err != nil {
			return c.boundError(fmt.Errorf("fencing output: %w", err))
		}
		if resp.Text != "" {
			resp.Text += "\n"
		}
		resp.Text += f.Text
		resp.Truncated = resp.Truncated || cut
		// structuredContent carries the fence too, never the bare content: a
		// client that hands structuredContent to the model keeps the boundary
		// and the notice (issue 10 item 6; TestUntrustedBinaryTextIsFenced).
		resp.Structured = fence.Structured(res.Structured, f.Text, res.Untrusted.Source, res.Untrusted.Kind)
		if res.Untrusted.Attribute {
			a := c.attribute(meta.AttributionID, f.Text, res.Untrusted)
			resp.Structured.(map[string]any)["attribution"] = a
			resp.Structured.(map[string]any)["content"] = f.Text
			res.Audit["attribution_id"] = a.ID
		}
		if res.Audit == nil {
			res.Audit = map[string]any{}
		}
		if f.Changed {
			res.Audit["fence_sanitized"] = f.Stats
		}
		c.saw(res.Untrusted, untrusted, meta.AttributionID, res.Audit)
	}
	if res.Trusted != nil {
		c.saw(res.Trusted, res.TrustedText, "", res.Audit)
	}
	// Untrusted content never leaves as a textual resource outside the fence
	// (issue 10 item 6); a tool that tried is a bug, so the call fails closed.
	for _, b := range res.Blobs {
		if b.Trust != "trusted" && fence.TextualMIME(b.MIMEType) {
			return c.boundError(fmt.Errorf("untrusted blob %s has textual type %q: %w", b.URI, b.MIMEType, errUnfencedText))
		}
	}
	out := len(resp.Text)
	for _, b := range res.Blobs {
		out += len(b.Data)
	}
	c.rec.Outcome, c.rec.OutputBytes, c.rec.Truncated = audit.OutcomeOK, int64(out), resp.Truncated
	if len(res.Audit) > 0 {
		// A fetch's final URL may come from a redirect to a presigned or
		// token-bearing URL: its query credentials are hashed.
		c.rec.Extra = audit.WithClient(rawjson.Marshal(c.s.r.redactor.Strings(res.Audit)), c.s.clientID)
	}
	return resp
}

// errUnfencedText: a tool returned untrusted text as an embedded resource.
var errUnfencedText = errors.New("untrusted textual content outside the fence")

// errExactTooLarge: a tool that sizes its own output (a read page) went over
// the limit; cutting it would make its next_offset lie (issue 10 item 11).
var errExactTooLarge = errors.New("exact result over the output limit")

// attribute signs who/what/when for fenced content: the hash is over the
// fenced content exactly as the agent receives it under "content", so
// `airlock attribution verify` can check a saved result.
func (c *call) attribute(id, content string, p *toolkit.Provenance) attribution.Attribution {
	return c.s.r.signer.Sign(attribution.Attribution{
		ID: id, Source: p.Source, RetrievedAt: p.RetrievedAt.UTC(), SessionID: c.s.id,
		DeclarationID: p.DeclarationID, ContentSHA256: attribution.ContentHash(content), TrustLevel: p.Trust, Kind: p.Kind,
	})
}

// errorText is an error as the trail keeps it: at most 4 KiB.
func errorText(s string) string {
	out, _ := textcut.Marked(s, 4096)
	return out
}
