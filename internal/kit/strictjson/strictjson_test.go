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
		// Case variants: encoding/json binds either to a field "message".
		{`{"message":"hi","Message":"secret"}`, 8, ErrDuplicateKey},
		{`{"message":"hi","meſſage":"secret"}`, 8, ErrDuplicateKey},
		{"{\"message\":1,\"me\u017f\u017fage\":2}", 8, ErrDuplicateKey},
		{`{"k":1,"K":2}`, 8, ErrDuplicateKey},
		{`{"a0":0,"a1":1,"a2":2,"a3":3,"a4":4,"a5":5,"a6":6,"a7":7,"a8":8,"a9":9,"b0":0,"b1":1,"b2":2,"b3":3,"b4":4,"b5":5,"b6":6,"A6":7}`, 8, ErrDuplicateKey},
		{`{"a":1,"b":2,"ab":3}`, 8, nil},
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
