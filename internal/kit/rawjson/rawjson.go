// Package rawjson encodes the detail an audit record carries (its Extra)
// and the other small documents the engine stores, in the one way every
// writer shares. The invariants it keeps: [Marshal] never fails a caller —
// a value that cannot be encoded becomes an object naming the encoding
// error, so a record about an event is written even when its detail is
// odd; and [Plain] keeps text as it was written, so bytes that are hashed
// or stored read back as the text they hold.
package rawjson

import (
	"bytes"
	"encoding/json"
)

// Marshal is json.Marshal that cannot fail: a value it cannot encode
// becomes {"marshal_error": "..."}.
func Marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
	}
	return b
}

// Plain is compact JSON without HTML escaping ("<b>" stays "<b>" rather
// than "\u003cb\u003e") and without the newline a json.Encoder ends with:
// the one encoding of a need's canonical form, the columns of a stored
// declaration and the AgentDojo replay's argument keys.
func Plain(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
