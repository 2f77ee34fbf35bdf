package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/strictjson"
)

// scrubMarker stands for a brokered secret, as credentials.Marker renders one.
const scrubMarker = "[REDACTED:credential:up-cred]"

// tokenAlphabet: what a bearer token or API key is spelt with (RFC 6750's
// b64token and the usual key characters). A secret holding `"` or `\` is
// found in a schema only as JSON escapes it (SECURITY.md's known limit),
// and one holding JSON's own punctuation or spaces is not a credential.
const tokenAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/="

func tokenOf(s string) string {
	b := []byte(s)
	for i, c := range b {
		if strings.IndexByte(tokenAlphabet, c) < 0 {
			b[i] = tokenAlphabet[int(c)%len(tokenAlphabet)]
		}
	}
	return string(b)
}

func decodeNumbers(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// holds reports whether any key, string or number of v contains secret.
func holds(v any, secret string) bool {
	switch x := v.(type) {
	case string:
		return strings.Contains(x, secret)
	case json.Number:
		return strings.Contains(string(x), secret)
	case []any:
		for _, e := range x {
			if holds(e, secret) {
				return true
			}
		}
	case map[string]any:
		for k, e := range x {
			if strings.Contains(k, secret) || holds(e, secret) {
				return true
			}
		}
	}
	return false
}

// replaced is v with secret replaced in every key and string; ok is false
// when two keys would become one.
func replaced(v any, secret string) (any, bool) {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, secret, scrubMarker), true
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			r, ok := replaced(e, secret)
			if !ok {
				return nil, false
			}
			out[i] = r
		}
		return out, true
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			r, ok := replaced(e, secret)
			k = strings.ReplaceAll(k, secret, scrubMarker)
			if _, dup := out[k]; !ok || dup {
				return nil, false
			}
			out[k] = r
		}
		return out, true
	}
	return v, true
}

// FuzzScrubJSON: a hostile upstream lists a tool whose schema carries the
// brokered credential it was sent, in any JSON spelling (plain, \u
// escapes, \/), to get it pinned in the store and shown to the operator
// (and the agent). For any strict JSON schema (what the MCP client lets
// through) and any token-like secret, the schema scrubJSON hands on:
//   - holds the secret in none of its bytes, and in no key, string or
//     number of what it decodes to;
//   - is the upstream's bytes exactly when the secret is in neither
//     them nor their decoded text (a pin does not change for nothing);
//   - otherwise (the secret in keys and strings only) is JSON that reads
//     as the schema with the secret replaced, and nothing else changed.
func FuzzScrubJSON(f *testing.F) {
	const secret = "sk-live-4f9Q2xZ7pL1mN8vB"
	for _, s := range []string{
		`{"type":"object","properties":{"q":{"type":"string","description":"token sk-live-4f9Q2xZ7pL1mN8vB"}}}`,
		`{"type":"object","properties":{"q":{"description":"\u0073k-live-4f9Q2xZ7pL1mN8vB","default":"sk-live-4f9Q2xZ7pL1mN8vB"}}}`,
		`{"enum":["sk\u002dlive\u002d4f9Q2xZ7pL1mN8vB","x"],"examples":["<b>&amp;</b>"]}`,
		`{"sk-live-4f9Q2xZ7pL1mN8vB":{"const":"sk-live-4f9Q2xZ7pL1mN8vB"}}`,
		`{"description":"a\/b sk-live-4f9Q2xZ7pL1mN8vB\/c","maximum":1e400, "x" : [ 1 , 2.50 ]}`,
		`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`,
		`{"description":"\u2028 \ud83d\ude00 \u00e9"}`, `"sk-live-4f9Q2xZ7pL1mN8vB"`, `null`, `[]`, `{}`,
	} {
		f.Add([]byte(s), secret)
	}
	f.Fuzz(func(t *testing.T, raw []byte, s string) {
		secret := tokenOf(s)
		if len(secret) < 8 || len(secret) > 64 || strings.Contains(scrubMarker, secret) {
			return
		}
		if len(raw) == 0 || strictjson.Check(raw, 128) != nil {
			return // refused before it is scrubbed (MCPSession.request)
		}
		in, ok := decodeNumbers(raw)
		if !ok {
			t.Fatalf("strict JSON %q does not decode", raw)
		}
		sess := &Session{extra: &Extra{Scrub: func(s string) string { return strings.ReplaceAll(s, secret, scrubMarker) }}}
		out := sess.scrubJSON(json.RawMessage(raw))

		if bytes.Contains(out, []byte(secret)) {
			t.Fatalf("the secret is left in the bytes: %s", out)
		}
		got, valid := decodeNumbers(out)
		if valid && holds(got, secret) {
			t.Fatalf("%s reads as holding the secret", out)
		}
		if !bytes.Contains(raw, []byte(secret)) && !holds(in, secret) {
			if !bytes.Equal(out, raw) {
				t.Fatalf("nothing to scrub, yet %q became %q", raw, out)
			}
			return
		}
		var inNumber bool
		var walk func(any)
		walk = func(v any) {
			switch x := v.(type) {
			case json.Number:
				inNumber = inNumber || strings.Contains(string(x), secret)
			case []any:
				for _, e := range x {
					walk(e)
				}
			case map[string]any:
				for _, e := range x {
					walk(e)
				}
			}
		}
		walk(in)
		want, ok := replaced(in, secret)
		if inNumber || !ok {
			return // a number is not text to keep; two keys that become one cannot both be kept
		}
		if !valid || !reflect.DeepEqual(got, want) {
			t.Fatalf("scrubbing %q gave %q, which does not read as the schema with the secret replaced", raw, out)
		}
	})
}
