package argschema_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/internal/kit/argschema"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

const readSchema = `{"type": "object", "additionalProperties": false, "required": ["pool", "path"],
	"properties": {"pool": {"type": "string"}, "path": {"type": "string"},
	"offset": {"type": "integer", "minimum": 0}, "limits": {"type": "array", "items": {"type": "integer"}}}}`

func compile(t *testing.T) *argschema.Validator {
	t.Helper()
	v, err := argschema.Compile("read", []byte(readSchema))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// public is the refusal as the agent reads it; err must be INVALID_ARGUMENTS.
func public(t *testing.T, err error) string {
	t.Helper()
	var v *violation.Error
	if !errors.As(err, &v) || v.Code != violation.InvalidArguments {
		t.Fatalf("want INVALID_ARGUMENTS, got %v", err)
	}
	return v.Public()
}

// TestHugeNumbersRefused: a number the library would read exactly at great
// cost (1e1000000: 45 ms each, found by FuzzValidateToolArgs) is refused
// before the schema is applied, naming where it is. Before, the first case
// even passed validation.
func TestHugeNumbersRefused(t *testing.T) {
	v := compile(t)
	for _, c := range []struct{ args, where string }{
		{`{"pool":"a","path":"b","offset":1e1000000}`, `"/offset"`},
		{`{"pool":"a","path":"b","limits":[1,2,1E+999999]}`, `"/limits/2"`},
		{`{"pool":"a","path":"b","offset":1e-5000}`, `"/offset"`},
		{`{"pool":"a","path":"b","offset":` + strings.Repeat("9", 101) + `}`, `"/offset"`},
	} {
		err := v.Validate([]byte(c.args))
		if err == nil {
			t.Fatalf("%.60s: accepted", c.args)
		}
		if msg := public(t, err); !strings.Contains(msg, c.where) || !strings.Contains(msg, "too long to check") {
			t.Errorf("%.60s: %s", c.args, msg)
		}
	}
	for _, ok := range []string{`{"pool":"a","path":"b","offset":1e3}`, `{"pool":"a","path":"b","offset":12345678901234}`} {
		if err := v.Validate([]byte(ok)); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
}

// TestRefusalTheSameEachTime: with several offending arguments the
// library's causes come in map order; the refusal names the same one every
// time (FuzzValidateToolArgs saw 4 texts in 50 runs of one input).
func TestRefusalTheSameEachTime(t *testing.T) {
	v := compile(t)
	args := []byte(`{"pool":1,"path":2,"offset":-1,"limits":["x"],"zz":1,"aa":2}`)
	first := public(t, v.Validate(args))
	for range 50 {
		if got := public(t, v.Validate(args)); got != first {
			t.Fatalf("refusal changed: %q then %q", first, got)
		}
	}
}

// TestRefusalEscapesNames: keys the agent chose are quoted, escaped and
// cut — no control or bidirectional character, no unbounded echo.
func TestRefusalEscapesNames(t *testing.T) {
	v := compile(t)
	long := strings.Repeat("k", 10000)
	msg := public(t, v.Validate([]byte(`{"pool":"a","path":"b","evil\u202egnp.exe":1,"`+long+`":2,"c1":3,"c2":4,"c3":5,"c4":6}`)))
	if strings.ContainsRune(msg, '\u202e') || strings.Contains(msg, strings.Repeat("k", 65)) {
		t.Fatalf("names not escaped and cut: %.300q", msg)
	}
	if !strings.Contains(msg, `\u202e`) || !strings.Contains(msg, "and 1 more") || len(msg) > 1000 {
		t.Fatalf("refusal %q", msg)
	}
}
