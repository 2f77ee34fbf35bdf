package yamlfile

import (
	"errors"
	"strings"
	"testing"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name, in, want string
		err            error
	}{
		{"indents and keeps key order", "b: 1\na:\n- x\n- y\n", "b: 1\n\na: [x, \"y\"]\n", nil},
		{"keeps a comment above a key and at a line's end", "# head\nk: v # tail\n", "# head\nk: v # tail\n", nil},
		{"a short scalar list is flow, on its key's line", "allow:\n  - pool.*\n  - comm.search\n", "allow: [pool.*, comm.search]\n", nil},
		{"flow stays flow", "allow: [pool.*, comm.search]\n", "allow: [pool.*, comm.search]\n", nil},
		{"a long list stays block", "argv: [" + strings.Repeat("abcdefghij, ", 9) + "x]\n", "argv:\n" + strings.Repeat("  - abcdefghij\n", 9) + "  - x\n", nil},
		{"a list of mappings stays block", "rules: [{id: a, effect: allow}]\n", "rules:\n  - id: a\n    effect: allow\n", nil},
		{"nested under a sequence item", "p:\n  - name: x\n    argv: [a, b]\n", "p:\n  - name: x\n    argv: [a, b]\n", nil},
		{"a scalar a flow list would misread keeps its list block", "l: [\"a,b\", \"c: d\"]\n", "l:\n  - a,b\n  - \"c: d\"\n", nil},
		{"a literal block is text", "s: |\n  k:\n  - a\n\n  end\nt: 1\n", "s: |\n  k:\n  - a\n  \n  end\n\nt: 1\n", nil},
		{"a blank line before each section, above its comments", "a: 1\n# about b\nb:\n  c: 2\n\n\n  d: 3\n", "a: 1\n\n# about b\nb:\n  c: 2\n  d: 3\n", nil},
		{"a document that is a sequence starts at column 0", "# c\n- {id: a, b: [x]}\n- y\n", "# c\n- id: a\n  b: [x]\n- \"y\"\n", nil},
		{"end-of-line comments of consecutive lines aligned", "a:\n  b: 1 # one\n  ccc: [x, z]    # two\n  d: 2\n  e: 3   # three\n", "a:\n  b: 1        # one\n  ccc: [x, z] # two\n  d: 2\n  e: 3 # three\n", nil},
		{"a comment heading a list ends its flow line", "allow:\n  # why\n  - a\n", "allow: [a] # why\n", nil},
		{"quotes what YAML 1.1 reads as a boolean or number", "x: \"yes\"\ny: \"1\"\n", "x: \"yes\"\n\n\"y\": \"1\"\n", nil},
		{"empty document", "  \n", "", ErrEmpty},
		{"malformed", "a: [\n", "", nil},
		{"duplicate key", "a: 1\na: 2\n", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Format("f.yaml", []byte(tt.in))
			if tt.want == "" {
				if err == nil || (tt.err != nil && !errors.Is(err, tt.err)) {
					t.Fatalf("err = %v, want an error (%v)", err, tt.err)
				}
				var fe *Error
				if !errors.As(err, &fe) || fe.File != "f.yaml" {
					t.Fatalf("error %v is not a *yamlfile.Error naming the file", err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("Format = %q, %v; want %q", got, err, tt.want)
			}
			again, err := Format("f.yaml", got)
			if err != nil || string(again) != string(got) {
				t.Fatalf("not idempotent: %q → %q (%v)", got, again, err)
			}
		})
	}
}

// FuzzFormat: for any input, Format either refuses it or returns a
// document with the same value that formats to itself.
func FuzzFormat(f *testing.F) {
	for _, s := range []string{
		"a: 1\n", "# c\nk: [x, y] # t\n", "policies:\n  base:\n    allow: [\"pool.*\"]\n    rules:\n      - {id: r, capability: comm.fetch, when: 'url.host == \"a\"', effect: allow}\n",
		"a: &x {b: 1}\nc: *x\n", "s: |\n  two\n  lines\n", "k: 'it''s'\n", "- 1\n- -2\n- 0x10\n", "x: ~\ny: null\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		out, err := Format("fuzz.yaml", data)
		if err != nil {
			return
		}
		if err := sameValue("fuzz.yaml", data, out); err != nil {
			t.Fatalf("value changed: %v\n%q\n%q", err, data, out)
		}
		again, err := Format("fuzz.yaml", out)
		if err != nil {
			t.Fatalf("output refused: %v\n%q", err, out)
		}
		if string(again) != string(out) {
			t.Fatalf("not idempotent:\n%q\n%q", out, again)
		}
	})
}
