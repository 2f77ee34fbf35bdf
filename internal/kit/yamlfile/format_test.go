package yamlfile

import (
	"errors"
	"testing"
)

func TestFormat(t *testing.T) {
	tests := []struct {
		name, in, want string
		err            error
	}{
		{"indents and keeps key order", "b: 1\na:\n- x\n- y\n", "b: 1\na:\n  - x\n  - \"y\"\n", nil},
		{"keeps a comment above a key and at a line's end", "# head\nk: v # tail\n", "# head\nk: v # tail\n", nil},
		{"flow style becomes block", "allow: [pool.*, comm.search]\n", "allow:\n  - pool.*\n  - comm.search\n", nil},
		{"quotes what YAML 1.1 reads as a boolean or number", "x: \"yes\"\ny: \"1\"\n", "x: \"yes\"\n\"y\": \"1\"\n", nil},
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
