package rawjson

import "testing"

// TestMarshal: a value is encoded as json.Marshal does; one it cannot
// encode becomes an object naming the error, never a failure or nil.
func TestMarshal(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"object", map[string]any{"a": 1}, `{"a":1}`},
		{"string", "x", `"x"`},
		{"unencodable", make(chan int), `{"marshal_error":"json: unsupported type: chan int"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(Marshal(tc.v)); got != tc.want {
				t.Errorf("Marshal = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestPlain: compact, no HTML escaping, no trailing newline; a value that
// cannot be encoded is an error.
func TestPlain(t *testing.T) {
	got, err := Plain(map[string]any{"b": "<b>&amp;</b>", "a": []int{1, 2}})
	if err != nil || string(got) != `{"a":[1,2],"b":"<b>&amp;</b>"}` {
		t.Errorf("Plain = %s, %v", got, err)
	}
	if _, err := Plain(make(chan int)); err == nil {
		t.Error("Plain of a channel: no error")
	}
}
