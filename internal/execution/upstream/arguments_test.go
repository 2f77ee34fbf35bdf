package upstream

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestArgumentNames: every key of a need's arguments must be one the
// pinned input schema names where it stands, spelt exactly; other keys
// pass only where the schema explicitly allows them and the policy opts in.
func TestArgumentNames(t *testing.T) {
	const (
		flat   = `{"type":"object","properties":{"message":{"type":"string"},"limit":{"type":"number"}}}`
		open   = `{"type":"object","properties":{"q":{}},"additionalProperties":true}`
		closed = `{"type":"object","properties":{"q":{}},"additionalProperties":false}`
		schema = `{"type":"object","properties":{"q":{}},"additionalProperties":{"type":"string"}}`
		pat    = `{"type":"object","patternProperties":{"^x-":{}}}`
		nested = `{"type":"object","properties":{"opts":{"type":"object","properties":{"limit":{}}},"free":{"type":"object"},"any":{},
			"list":{"type":"array","items":{"type":"object","properties":{"id":{}}}},
			"pair":{"type":"array","prefixItems":[{"type":"object","properties":{"a":{}}}]}}}`
		refs = `{"$defs":{"base":{"properties":{"message":{}}},"loop":{"$ref":"#/$defs/loop"}},
			"allOf":[{"$ref":"#/$defs/base"},{"$ref":"#/$defs/loop"}],"anyOf":[{"properties":{"limit":{}}}],"oneOf":[{"properties":{"a~b/c":{}}}]}`
	)
	for _, tc := range []struct {
		name, schema, args string
		additional         bool
		key, path          string // "" key: accepted
	}{
		{"named", flat, `{"message":"hi","limit":5}`, false, "", ""},
		{"empty", flat, `{}`, false, "", ""},
		{"other case", flat, `{"Message":"secret","LIMIT":5000}`, false, "LIMIT", ""},
		{"folded", flat, `{"me\u017f\u017fage":"secret"}`, false, "me\u017f\u017fage", ""},
		{"escaped spelling of a name", flat, `{"\u006dessage":"hi"}`, false, "", ""},
		{"escaped other case", flat, `{"\u004dessage":"hi"}`, false, "Message", ""},
		{"invisible", flat, `{"message\u200b":"hi"}`, false, "message\u200b", ""},
		{"flat ignores opt-in", flat, `{"x":1}`, true, "x", ""},
		{"no schema names nothing", `{}`, `{"a":1}`, true, "a", ""},
		{"no properties", `{"type":"object"}`, `{"a":1}`, false, "a", ""},
		{"open without opt-in", open, `{"q":1,"x":1}`, false, "x", ""},
		{"open with opt-in", open, `{"q":1,"x":1}`, true, "", ""},
		{"closed with opt-in", closed, `{"x":1}`, true, "x", ""},
		{"schema-valued with opt-in", schema, `{"x":"y"}`, true, "", ""},
		{"pattern without opt-in", pat, `{"x-a":1}`, false, "x-a", ""},
		{"pattern with opt-in", pat, `{"x-a":1}`, true, "", ""},
		{"nested named", nested, `{"opts":{"limit":1}}`, false, "", ""},
		{"nested other case", nested, `{"opts":{"Limit":1}}`, false, "Limit", "/opts"},
		{"free-form object", nested, `{"free":{"Anything":1},"any":{"B":[{"C":1}]}}`, false, "", ""},
		{"array items", nested, `{"list":[{"id":1},{"ID":2}]}`, false, "ID", "/list/1"},
		{"prefix items", nested, `{"pair":[{"A":1},{"B":2}]}`, false, "A", "/pair/0"},
		{"refs and branches", refs, `{"message":1,"limit":2,"a~b/c":3}`, false, "", ""},
		{"refs other case", refs, `{"Message":1}`, false, "Message", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := newArgumentShape(json.RawMessage(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			err = s.check(json.RawMessage(tc.args), tc.additional)
			var ae *ArgumentError
			switch {
			case tc.key == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.key == "":
			case !errors.As(err, &ae) || !errors.Is(err, ErrArgumentNotInSchema):
				t.Fatalf("want the key %q refused, got %v", tc.key, err)
			case ae.Key != tc.key || ae.Path != tc.path:
				t.Fatalf("refused %q at %q, want %q at %q", ae.Key, ae.Path, tc.key, tc.path)
			}
		})
	}
}

// TestArgumentErrorMessage: the agent reads the key quoted and escaped
// (no invisible or bidi character reaches it raw), cut when long, and the
// names the schema gives.
func TestArgumentErrorMessage(t *testing.T) {
	e := &ArgumentError{Path: "/opts", Key: "lim\u202eit\u200b" + strings.Repeat("k", 100), Names: []string{"limit"}}
	msg := e.Message()
	if !strings.Contains(msg, `"lim\u202eit\u200bkkk`) || !strings.Contains(msg, `"… in "/opts"`) || !strings.Contains(msg, `names "limit"`) ||
		strings.ContainsAny(msg, "\u202e\u200b") || strings.Contains(msg, strings.Repeat("k", 64)) {
		t.Fatalf("message: %s", msg)
	}
}

// FuzzArgumentNames: the check never panics, and what it accepts without
// the opt-in holds, at the top level, only keys the schema names.
func FuzzArgumentNames(f *testing.F) {
	f.Add(`{"type":"object","properties":{"a":{"properties":{"b":{}}}}}`, `{"a":{"b":1,"B":[{}]}}`)
	f.Add(`{"$ref":"#","allOf":[{"$ref":"#/allOf/0"}]}`, `{"x":[1,{"y":{}}]}`)
	f.Fuzz(func(t *testing.T, schema, args string) {
		s, err := newArgumentShape(json.RawMessage(schema))
		if err != nil {
			return
		}
		if err := s.check(json.RawMessage(args), false); err != nil {
			return
		}
		var top map[string]any
		if json.Unmarshal([]byte(args), &top) != nil {
			return
		}
		names := s.place([]any{s.root}).props
		for k := range top {
			if _, ok := names[k]; !ok {
				t.Fatalf("accepted %q, which the schema does not name", k)
			}
		}
	})
}
