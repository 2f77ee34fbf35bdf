package audit_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/airlock-dev/airlock/internal/audit/audit"
)

// FuzzMergeExtra checks what MergeExtra, WithLabels and WithClient do to a
// record's extra, which is any valid JSON (or empty) once a call has run:
// the result is one JSON object; it holds key with exactly the value given
// (a label's source or a client id is the agent's or an upstream's text);
// every other member of an object extra is kept as it was, and an extra
// that is not an object is kept whole under "extra". None of them panics.
// It would catch a record that loses its labels or provenance (the detail
// a reviewer relies on), a forged "labels" member surviving beside the
// store's own, or a panic inside the store's transaction that appends the
// labelled record.
func FuzzMergeExtra(f *testing.F) {
	seeds := []struct{ extra, key, val string }{
		{``, "labels", "src-1"},
		{`{"path":"a.md","pool":"docs"}`, "provenance", "att_01"},
		{`{"labels":[{"seq":1,"source":"forged"}],"path":"x"}`, "labels", "real"},
		{`"a string"`, "labels", "x"},
		{`[1,2,3]`, "client_id", "client-7"},
		{`{}`, "client_id", "\xff\xfe"},
		{`{"a":1,"a":2}`, "b", "<script>"},
		{` {"k" : [ true ] } `, "extra", "v"},
	}
	for _, s := range seeds {
		f.Add([]byte(s.extra), s.key, s.val)
	}
	f.Fuzz(func(t *testing.T, extra []byte, key, val string) {
		if len(extra) > 0 && !json.Valid(extra) {
			t.Skip("a record's extra is empty or valid JSON")
		}
		// What a reader of the record gets back: JSON spells invalid UTF-8
		// as U+FFFD.
		wantVal := decodeString(t, mustMarshal(t, val))
		wantKey := decodeString(t, mustMarshal(t, key))

		check := func(name string, out json.RawMessage, key string, read func(json.RawMessage) bool) {
			t.Helper()
			var m map[string]json.RawMessage
			if err := json.Unmarshal(out, &m); err != nil || m == nil {
				t.Fatalf("%s(%q) = %s: not a JSON object (%v)", name, extra, out, err)
			}
			got, ok := m[key]
			if !ok || !read(got) {
				t.Fatalf("%s(%q) = %s: %q does not hold the value given", name, extra, out, key)
			}
			in, isObject := objectOf(extra)
			switch {
			case len(extra) == 0:
				if len(m) != 1 {
					t.Fatalf("%s of an empty extra = %s: more than the key", name, out)
				}
			case isObject:
				for k, v := range in {
					if k == key {
						continue
					}
					if !sameJSON(t, m[k], v) {
						t.Fatalf("%s(%q) = %s: member %q changed", name, extra, out, k)
					}
				}
			default:
				if key != "extra" && !sameJSON(t, m["extra"], extra) {
					t.Fatalf("%s(%q) = %s: a non-object extra is not kept under \"extra\"", name, extra, out)
				}
			}
		}

		out := audit.MergeExtra(extra, key, val)
		check("MergeExtra", out, wantKey, func(v json.RawMessage) bool { return decodeString(t, v) == wantVal })

		labels := []audit.Label{{Seq: 3, Source: val, Integrity: "untrusted", SHA256: key, Bytes: int64(len(val)), Readers: []string{val}}}
		out = audit.WithLabels(extra, labels)
		check("WithLabels", out, "labels", func(v json.RawMessage) bool {
			var got []struct {
				Source  string   `json:"source"`
				SHA256  string   `json:"sha256"`
				Readers []string `json:"readers"`
			}
			return json.Unmarshal(v, &got) == nil && len(got) == 1 && got[0].Source == wantVal &&
				len(got[0].Readers) == 1 && got[0].Readers[0] == wantVal
		})

		if val == "" {
			return // WithClient adds nothing for no client
		}
		out = audit.WithClient(extra, val)
		if _, isObject := objectOf(extra); !isObject && len(extra) > 0 {
			if !bytes.Equal(out, extra) {
				t.Fatalf("WithClient changed a non-object extra %q to %s", extra, out)
			}
			return
		}
		check("WithClient", out, "client_id", func(v json.RawMessage) bool { return decodeString(t, v) == wantVal })
	})
}

// objectOf is extra's members when it is a JSON object (null is not one).
func objectOf(extra []byte) (map[string]json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(extra, &m) != nil || m == nil {
		return nil, false
	}
	return m, true
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decodeString(t *testing.T, b []byte) string {
	t.Helper()
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "\x00not a string: " + string(b)
	}
	return s
}

// sameJSON compares two JSON texts by value, numbers as written (the
// encoder may escape "<" as \u003c: the same value).
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	va, oka := valueOf(a)
	vb, okb := valueOf(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}

func valueOf(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	return v, dec.Decode(&v) == nil
}
