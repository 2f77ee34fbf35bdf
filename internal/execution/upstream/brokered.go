package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"

	"github.com/airlock-dev/airlock/internal/execution/comm"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// Brokered credentials (issue 23 item 3): what Airlock adds to one
// call's connection on the caller's behalf — a role's credential headers
// or variables, a token exchanged for the upstream's audience — computed
// by the runner (package credentials, package tokenexchange) and handed
// to Dial as an *Extra. The agent never sees them: everything the
// session reads back (the answer, an error's text, the tool list that is
// pinned in the store) has them replaced by Extra.Scrub, so a hostile
// upstream echoing its Authorization header reaches neither the agent,
// nor the audit trail, the log or the pins (server's
// TestUpstreamBrokeredCredentials).

// Extra is what one call's connection carries beyond the upstream's own
// configuration. The zero value (and nil) adds nothing.
type Extra struct {
	// Headers go with every request to an HTTP upstream, over any of the
	// upstream's own (config.checkUpstreamCredentials refuses a clash).
	Headers map[string]string
	// Env are NAME=value variables of a stdio upstream's process.
	Env []string
	// Scrub replaces the secrets above in text the upstream sent.
	Scrub func(string) string
}

func (e *Extra) addHeaders(h map[string]string) {
	if e == nil {
		return
	}
	for k, v := range e.Headers {
		h[k] = v
	}
}

func (e *Extra) env() []string {
	if e == nil {
		return nil
	}
	return e.Env
}

func (e *Extra) scrub(s string) string {
	if e == nil || e.Scrub == nil {
		return s
	}
	return e.Scrub(s)
}

// ListTools lists the upstream's tools with the brokered secrets
// scrubbed from every definition (so none is pinned in the store).
func (s *Session) ListTools(ctx context.Context) ([]comm.MCPTool, error) {
	tools, err := s.MCPSession.ListTools(ctx)
	if err != nil || s.extra == nil {
		return tools, s.scrubErr(err)
	}
	for i := range tools {
		t := &tools[i]
		t.Name, t.Description = s.extra.scrub(t.Name), s.extra.scrub(t.Description)
		t.InputSchema, t.OutputSchema = s.scrubJSON(t.InputSchema), s.scrubJSON(t.OutputSchema)
	}
	return tools, nil
}

// CallTool calls a tool; the answer and any error come back scrubbed.
func (s *Session) CallTool(ctx context.Context, name string, args json.RawMessage) (*comm.MCPResult, error) {
	res, err := s.MCPSession.CallTool(ctx, name, args)
	if res != nil {
		res.Text = s.extra.scrub(res.Text)
	}
	return res, s.scrubErr(err)
}

// scrubJSON scrubs a schema as its strings read, not as the upstream
// escaped them (a secret spelt \u0041… would pass a byte search): it is
// re-encoded without escaping, and replaced only if a secret was in it.
func (s *Session) scrubJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return json.RawMessage(s.extra.scrub(string(raw)))
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return raw
	}
	plain := bytes.TrimSpace(b.Bytes())
	if clean := s.extra.scrub(string(plain)); clean != string(plain) {
		return json.RawMessage(clean)
	}
	return json.RawMessage(s.extra.scrub(string(raw)))
}

// scrubErr keeps err's kind (errors.Is and As still see it) but its text,
// which the audit trail and the log keep, scrubbed.
func (s *Session) scrubErr(err error) error {
	if err == nil || s.extra == nil {
		return err
	}
	var v *violation.Error
	if errors.As(err, &v) {
		out := *v
		out.Message, out.Err = s.extra.scrub(v.Message), s.scrubErr(v.Err)
		return &out
	}
	return &scrubbedError{msg: s.extra.scrub(err.Error()), err: err}
}

// ScrubError is scrubErr for errors of a session that never opened (a
// failed Dial): what the upstream answered may be in their text.
func (e *Extra) ScrubError(err error) error { return (&Session{extra: e}).scrubErr(err) }

// scrubbedError is an error whose text is scrubbed; Unwrap keeps the
// cause for errors.Is and As (its own text is never printed from here).
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// CredentialViolation is what the agent sees when a brokered credential
// cannot be had: the exchange's own violation (tokenexchange's typed
// refusals), else UPSTREAM_CREDENTIAL_UNAVAILABLE naming no secret.
func CredentialViolation(upstream string, err error) error {
	var v *violation.Error
	if errors.As(err, &v) {
		return v
	}
	return violation.Wrap(violation.UpstreamCredential, err, "upstream %q: a credential configured for this call cannot be used (revoked or invalid); the call is refused", upstream)
}

// Source is the attributed source of an upstream tool's answer: the
// upstream, the tool and the pinned definition's digest, covered by the
// attribution's signature.
func Source(upstream, tool, digest string) string {
	return "mcp://" + upstream + "/" + tool + "?pin=sha256:" + digest
}
