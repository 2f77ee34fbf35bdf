// Package rawjson encodes the detail an audit record carries (its Extra)
// and the other small documents the engine stores, in the one way every
// writer shares. The invariant it keeps: encoding never fails a caller — a
// value that cannot be encoded becomes an object naming the encoding error,
// so a record about an event is written even when its detail is odd.
package rawjson

import "encoding/json"

// Marshal is json.Marshal that cannot fail: a value it cannot encode
// becomes {"marshal_error": "..."}.
func Marshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"marshal_error": err.Error()})
	}
	return b
}
