package nearest

import (
	"fmt"
	"testing"
)

func TestName(t *testing.T) {
	cands := []string{"server", "pools", "policies", "roles", "transports", "pipelines"}
	for _, tc := range []struct{ text, want string }{
		{"pool", "pools"},
		{"polices", "policies"},
		{"transport", "transports"},
		{"rolse", "roles"},
		{"pools", "pools"},
		{"zzz", ""},    // nothing close
		{"x", ""},      // too short to guess
		{"limits", ""}, // a real word, not a typo of any
		{"", ""},
	} {
		if got := Name(tc.text, cands); got != tc.want {
			t.Errorf("Name(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func ExampleName() {
	fmt.Println(Name("descripton", []string{"id", "description", "path", "trust"}))
	// Output: description
}
