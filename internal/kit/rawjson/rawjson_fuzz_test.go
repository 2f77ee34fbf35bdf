package rawjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzPlainRoundTrip checks Plain on what an agent's arguments decode to
// (a need's canonical form and a stored declaration's columns are Plain of
// such values): the result is one line of valid JSON that reads back as
// the very value encoded (text as written: "<", "&", U+2028 and invalid
// UTF-8 already replaced by the decoder alike), and encoding what it reads
// back gives the same bytes, so a canonical form stored and read again
// hashes the same and two different needs never share one. Marshal of the
// same value is valid JSON holding the same value. It would catch an
// approval that no longer matches its stored need, or two needs an
// approver cannot tell apart.
func FuzzPlainRoundTrip(f *testing.F) {
	seeds := []string{
		`{"operation":"send_money","arguments":{"recipient":"GB29NWBK60161331926819","amount":100.5}}`,
		`{"url":"https://example.com/?q=<b>&x=1","note":"a\u2028b"}`,
		`["\ud800", "\u0000", "é", 1e21, -0, 0.1, 12345678901234567890]`,
		`{"a":{"b":{"c":[true,false,null]}}}`,
		`"<script>&amp;</script>"`,
		"\"\xff\xfe\"",
		`{"k":"v","k":"w"}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			t.Skip("arguments are JSON")
		}
		p, err := Plain(v)
		if err != nil {
			t.Fatalf("Plain(%s): %v", b, err)
		}
		if !json.Valid(p) || bytes.ContainsAny(p, "\n\r") {
			t.Fatalf("Plain(%s) = %q: not one line of JSON", b, p)
		}
		var back any
		if err := json.Unmarshal(p, &back); err != nil || !reflect.DeepEqual(back, v) {
			t.Fatalf("Plain(%s) = %s reads back as %#v, want %#v (%v)", b, p, back, v, err)
		}
		again, err := Plain(back)
		if err != nil || !bytes.Equal(again, p) {
			t.Fatalf("Plain is not stable: %s then %s (%v)", p, again, err)
		}
		m := Marshal(v)
		var mv any
		if err := json.Unmarshal(m, &mv); err != nil || !reflect.DeepEqual(mv, v) {
			t.Fatalf("Marshal(%s) = %s reads back as %#v (%v)", b, m, mv, err)
		}
	})
}
