package yamlfile

import (
	"errors"
	"strings"
	"testing"
)

type doc struct {
	Name  string   `json:"name"`
	Count int      `json:"count"`
	Tags  []string `json:"tags,omitempty"`
	Inner struct {
		When string `json:"when"`
	} `json:"inner"`
}

func TestDecodeReportsLine(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		want      string
	}{
		{"unknown key", "name: a\ncount: 1\ncolour: red\n", 3, "unknown field"},
		{"type error", "name: a\ncount: many\n", 2, "count"},
		{"duplicate key", "name: a\nname: b\n", 2, "already defined"},
		{"syntax", "name: [a\n", 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d doc
			err := Decode("cfg.yaml", []byte(tc.src), &d)
			var ye *Error
			if !errors.As(err, &ye) {
				t.Fatalf("Decode error = %v, want *Error", err)
			}
			if ye.File != "cfg.yaml" || ye.Line != tc.line {
				t.Errorf("position = %s:%d, want cfg.yaml:%d (%v)", ye.File, ye.Line, tc.line, err)
			}
			if !strings.Contains(strings.ToLower(err.Error()), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestDecodeEmpty(t *testing.T) {
	var d doc
	if err := Decode("x.yaml", []byte("  \n"), &d); !errors.Is(err, ErrEmpty) {
		t.Fatalf("err = %v, want ErrEmpty", err)
	}
}

func TestDecodeOK(t *testing.T) {
	var d doc
	if err := Decode("x.yaml", []byte("name: a\ncount: 2\ninner:\n  when: x > 1\n"), &d); err != nil {
		t.Fatal(err)
	}
	if d.Name != "a" || d.Count != 2 || d.Inner.When != "x > 1" {
		t.Fatalf("decoded %+v", d)
	}
}

func TestLocate(t *testing.T) {
	src := []byte("name: a\ninner:\n  when: bad(\n")
	e := At("p.yaml", src, "$.inner.when", errors.New("syntax"))
	if e.Line != 3 {
		t.Fatalf("line = %d, want 3 (%v)", e.Line, e)
	}
	if got := e.Error(); !strings.HasPrefix(got, "p.yaml:3:") {
		t.Fatalf("Error() = %q", got)
	}
	if l, _ := Locate(src, "$.missing"); l != 0 {
		t.Fatalf("missing path line = %d", l)
	}
}

func TestDecodeSurvivesParserPanic(t *testing.T) {
	var d struct {
		Cases []doc `json:"cases"`
	}
	err := Decode("c.yaml", []byte("cases: ! \n"), &d)
	if err == nil {
		t.Fatal("malformed YAML accepted")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add("name: a\ncount: 1\n")
	f.Add("cases: ! \n")
	f.Add("inner: {when: [\n")
	f.Fuzz(func(t *testing.T, src string) {
		var d doc
		err := Decode("f.yaml", []byte(src), &d)
		var ye *Error
		if err != nil && (!errors.As(err, &ye) || ye.File != "f.yaml") {
			t.Fatalf("error without file: %v", err)
		}
	})
}
