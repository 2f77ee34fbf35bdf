package strictjson

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		in    string
		depth int
		want  error
	}{
		{`{"a":1,"b":[1,{"c":2}]}`, 8, nil},
		{`"x"`, 0, nil},
		{`{"a":1,"a":2}`, 8, ErrDuplicateKey},
		{`{"o":{"k":1,"k":1}}`, 8, ErrDuplicateKey},
		{`{"a":1} {}`, 8, ErrTrailing},
		{`{"a":`, 8, ErrSyntax},
		{`{"a":{"b":1}}`, 1, ErrTooDeep},
		{`{"a":{"b":1}}`, 2, nil},
		{strings.Repeat("[", 100) + strings.Repeat("]", 100), 64, ErrTooDeep},
	}
	for _, tc := range tests {
		if err := Check([]byte(tc.in), tc.depth); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("Check(%.30q, %d) = %v, want %v", tc.in, tc.depth, err, tc.want)
		}
	}
}

func FuzzCheck(f *testing.F) {
	f.Add(`{"a":[1,2,{"b":null}]}`)
	f.Add(`{"a":1,"a":1}`)
	f.Fuzz(func(t *testing.T, in string) {
		_ = Check([]byte(in), 16) // must not panic
	})
}
