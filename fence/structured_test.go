package fence

import (
	"reflect"
	"testing"
)

func TestStructured(t *testing.T) {
	extra := map[string]any{"untrusted": true, "untrusted_content": "F", "untrusted_source": "https://x", "untrusted_kind": "comm.fetch"}
	with := func(m map[string]any) map[string]any {
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name   string
		result any
		want   map[string]any
	}{
		{"object keeps its fields at the top", map[string]any{"status": 200.0}, with(map[string]any{"status": 200.0})},
		{"empty object", map[string]any{}, with(map[string]any{})},
		{"array goes under result", []string{"a"}, with(map[string]any{"result": []string{"a"}})},
		{"string goes under result", "s", with(map[string]any{"result": "s"})},
		{"nil", nil, with(map[string]any{"result": nil})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Structured(tc.result, "F", "https://x", "comm.fetch"); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Structured = %#v, want %#v", got, tc.want)
			}
		})
	}
}
