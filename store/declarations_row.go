package store

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/internal/kit/rawjson"
)

// This file maps a declarations.Declaration to a row of the declarations
// table and back. The rule it keeps: a declaration is either refused before
// anything is written, or it is stored so that reading it back gives the
// same declaration (times in UTC to the microsecond). JSON cannot carry
// invalid UTF-8 (encoding/json replaces it with U+FFFD) and the PostgreSQL
// twin's TEXT cannot carry NUL, so text holding either is refused rather
// than silently changed; a need that passed Need.Validate holds neither.

// historyEntry is a declarations.Transition as stored in the history
// column: the time in the store's fixed layout rather than encoding/json's,
// so the column reads like the rest of the file and sorts as text.
type historyEntry struct {
	From   string `json:"from"`
	To     string `json:"to"`
	At     string `json:"at"`
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
}

// declArgs checks d and returns its values in declColumns order, with now
// as updated_at. It does not modify d.
func declArgs(d *declarations.Declaration, now time.Time) ([]any, error) {
	if err := checkStorable(d); err != nil {
		return nil, err
	}
	var result sql.NullString
	if d.Result != nil {
		b, err := encodeJSON(d.Result)
		if err != nil {
			return nil, fmt.Errorf("store: declaration %s: encoding result: %w", d.ID, err)
		}
		result = sql.NullString{String: b, Valid: true}
	}
	hist := make([]historyEntry, len(d.History))
	for i, h := range d.History {
		hist[i] = historyEntry{From: string(h.From), To: string(h.To), At: formatTime(h.At), By: h.By, Reason: h.Reason}
	}
	history, err := encodeJSON(hist)
	if err != nil {
		return nil, fmt.Errorf("store: declaration %s: encoding history: %w", d.ID, err)
	}
	return []any{
		d.ID, d.ContextID, d.Principal, string(d.State), d.Fingerprint,
		string(d.Need.Canonical()), d.Decision, d.RuleID, d.Reason, d.DecidedBy,
		formatTime(d.CreatedAt), nullTime(d.DecidedAt), nullTime(d.ExpiresAt),
		nullTime(d.ExecutedAt), int64(d.Attempts), result, history, formatTime(now),
	}, nil
}

// declRow is one row as scanned, before decoding.
type declRow struct {
	id, session, principal, state, fingerprint, need string
	decision, ruleID, reason, decidedBy, createdAt   string
	decidedAt, expiresAt, executedAt, result         sql.NullString
	attempts                                         int64
	history, updatedAt                               string
}

// scanDeclRow reads one row selected with declColumns. Its error is the
// driver's (sql.ErrNoRows for none), unwrapped.
func scanDeclRow(row scanner) (*declRow, error) {
	var r declRow
	err := row.Scan(&r.id, &r.session, &r.principal, &r.state, &r.fingerprint,
		&r.need, &r.decision, &r.ruleID, &r.reason, &r.decidedBy, &r.createdAt,
		&r.decidedAt, &r.expiresAt, &r.executedAt, &r.attempts, &r.result,
		&r.history, &r.updatedAt)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// scanDeclaration reads and decodes one row.
func scanDeclaration(row scanner) (*declarations.Declaration, error) {
	r, err := scanDeclRow(row)
	if err != nil {
		return nil, err
	}
	return r.decode()
}

// decode turns a row back into a declaration. A row that does not decode
// was written behind the store's back; it is an error, never a guess.
func (r *declRow) decode() (*declarations.Declaration, error) {
	d := &declarations.Declaration{
		ID: r.id, ContextID: r.session, Principal: r.principal,
		State: declarations.State(r.state), Fingerprint: r.fingerprint,
		Decision: r.decision, RuleID: r.ruleID, Reason: r.reason, DecidedBy: r.decidedBy,
		Attempts: int(r.attempts),
	}
	bad := func(col string, err error) error {
		return fmt.Errorf("declaration %s: bad %s column: %w", r.id, col, err)
	}
	if int64(d.Attempts) != r.attempts {
		return nil, bad("attempts", fmt.Errorf("%d out of range", r.attempts))
	}
	var err error
	if d.CreatedAt, err = parseTime(r.createdAt); err != nil {
		return nil, bad("created_at", err)
	}
	for _, c := range []struct {
		col string
		v   sql.NullString
		t   *time.Time
	}{
		{"decided_at", r.decidedAt, &d.DecidedAt},
		{"expires_at", r.expiresAt, &d.ExpiresAt},
		{"executed_at", r.executedAt, &d.ExecutedAt},
	} {
		if !c.v.Valid {
			continue
		}
		if *c.t, err = parseTime(c.v.String); err != nil {
			return nil, bad(c.col, err)
		}
	}
	if err := decodeJSON(r.need, &d.Need); err != nil {
		return nil, bad("need", err)
	}
	if r.result.Valid {
		d.Result = new(declarations.ResultRef)
		if err := decodeJSON(r.result.String, d.Result); err != nil {
			return nil, bad("result", err)
		}
	}
	var hist []historyEntry
	if err := decodeJSON(r.history, &hist); err != nil {
		return nil, bad("history", err)
	}
	for i, h := range hist {
		at, err := parseTime(h.At)
		if err != nil {
			return nil, bad(fmt.Sprintf("history[%d].at", i), err)
		}
		d.History = append(d.History, declarations.Transition{
			From: declarations.State(h.From), To: declarations.State(h.To), At: at, By: h.By, Reason: h.Reason,
		})
	}
	return d, nil
}

// normalizeDeclaration makes d what reading it back gives: every time in
// UTC to the microsecond, no empty history.
func normalizeDeclaration(d *declarations.Declaration) {
	for _, t := range []*time.Time{&d.CreatedAt, &d.DecidedAt, &d.ExpiresAt, &d.ExecutedAt} {
		*t = storedTime(*t)
	}
	for i := range d.History {
		d.History[i].At = storedTime(d.History[i].At)
	}
	if len(d.History) == 0 {
		d.History = nil
	}
}

// storedTime is t as the store keeps it.
func storedTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// nullTime is a time column: NULL for the zero time, so "no deadline" is
// never compared as a deadline in year 1.
func nullTime(t time.Time) sql.NullString {
	if storedTime(t).IsZero() {
		return sql.NullString{}
	}
	return sql.NullString{String: formatTime(t), Valid: true}
}

// checkStorable refuses a declaration that could not be read back exactly.
// It checks representation only; the lifecycle is the Manager's.
func checkStorable(d *declarations.Declaration) error {
	if d.ID == "" {
		return &declarations.FieldError{Field: "id", Reason: "required"}
	}
	if !d.State.Valid() {
		return &declarations.FieldError{Field: "state", Reason: "not one of the declaration states"}
	}
	texts := []textField{
		{"id", d.ID}, {"context_id", d.ContextID}, {"principal", d.Principal},
		{"fingerprint", d.Fingerprint}, {"decision", d.Decision}, {"rule_id", d.RuleID},
		{"reason", d.Reason}, {"decided_by", d.DecidedBy},
		{"need.operation", string(d.Need.Operation)},
		{"need.parameters.url", d.Need.Parameters.URL},
		{"need.parameters.query", d.Need.Parameters.Query},
		{"need.parameters.source", d.Need.Parameters.Source},
		{"need.justification.user_request", d.Need.Justification.UserRequest},
		{"need.justification.missing_knowledge", d.Need.Justification.MissingKnowledge},
		{"need.justification.expected_use", d.Need.Justification.ExpectedUse},
	}
	if d.Result != nil {
		texts = append(texts, textField{"result.content_sha256", d.Result.ContentSHA256},
			textField{"result.attribution_id", d.Result.AttributionID})
	}
	for i, h := range d.History {
		p := fmt.Sprintf("history[%d].", i)
		texts = append(texts, textField{p + "from", string(h.From)}, textField{p + "to", string(h.To)},
			textField{p + "by", h.By}, textField{p + "reason", h.Reason})
		if !storableTime(h.At) {
			return &declarations.FieldError{Field: p + "at", Reason: "outside years 1 to 9999"}
		}
	}
	for _, t := range texts {
		if !utf8.ValidString(t.s) {
			return &declarations.FieldError{Field: t.field, Reason: "not valid UTF-8"}
		}
		if strings.IndexByte(t.s, 0) >= 0 {
			return &declarations.FieldError{Field: t.field, Reason: "contains a NUL character"}
		}
	}
	for _, t := range []struct {
		field string
		t     time.Time
	}{
		{"created_at", d.CreatedAt}, {"decided_at", d.DecidedAt},
		{"expires_at", d.ExpiresAt}, {"executed_at", d.ExecutedAt},
	} {
		if !storableTime(t.t) {
			return &declarations.FieldError{Field: t.field, Reason: "outside years 1 to 9999"}
		}
	}
	return nil
}

// textField is a field's JSON path and its text, for checkStorable.
type textField struct{ field, s string }

// storableTime reports whether timeLayout can write t and read it back.
func storableTime(t time.Time) bool {
	t = storedTime(t)
	return !t.Before(minTime) && !t.After(maxTime)
}

// encodeJSON is compact JSON without HTML escaping, so the columns hold
// the text as it was ("<b>" rather than "\u003cb\u003e").
func encodeJSON(v any) (string, error) {
	b, err := rawjson.Plain(v)
	return string(b), err
}

// decodeJSON reads exactly one JSON value with no field the type lacks: a
// column edited to hold more than the store wrote is refused, not
// partially read.
func decodeJSON(s string, v any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}
