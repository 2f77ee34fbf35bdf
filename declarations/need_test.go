package declarations_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/airlock-dev/airlock/declarations"
	"github.com/airlock-dev/airlock/declarations/declarationstest"
)

func TestCanonical(t *testing.T) {
	n := declarations.Need{
		Operation:  declarations.OpSearch,
		Parameters: declarations.Parameters{Query: `price <b> & "x"`},
		Justification: declarations.Justification{
			UserRequest: "a\nb", MissingKnowledge: "é", ExpectedUse: "\u2764\uFE0F",
		},
	}
	want := `{"operation":"comm.search","parameters":{"query":"price <b> & \"x\""},"justification":{"user_request":"a\nb","missing_knowledge":"é","expected_use":"❤️"}}`
	if got := string(n.Canonical()); got != want {
		t.Fatalf("Canonical:\n got %s\nwant %s", got, want)
	}
	sum := sha256.Sum256([]byte(want))
	if got := n.Fingerprint(); got != hex.EncodeToString(sum[:]) {
		t.Errorf("Fingerprint %s", got)
	}
	var back declarations.Need
	if err := json.Unmarshal(n.Canonical(), &back); err != nil || !reflect.DeepEqual(back, n) {
		t.Errorf("round trip: %v %+v", err, back)
	}
}

// TestFingerprintDistinct: changing any field changes the fingerprint, so
// an approval covers exactly one need.
func TestFingerprintDistinct(t *testing.T) {
	base := validQuery()
	seen := map[string]string{base.Fingerprint(): "base"}
	for name, change := range map[string]func(*declarations.Need){
		"operation":         func(n *declarations.Need) { n.Operation = declarations.OpSearch },
		"url":               func(n *declarations.Need) { n.Parameters.URL = "x" },
		"query":             func(n *declarations.Need) { n.Parameters.Query += " " },
		"source":            func(n *declarations.Need) { n.Parameters.Source += "2" },
		"user_request":      func(n *declarations.Need) { n.Justification.UserRequest += "." },
		"missing_knowledge": func(n *declarations.Need) { n.Justification.MissingKnowledge += "." },
		"expected_use":      func(n *declarations.Need) { n.Justification.ExpectedUse += "." },
		"field boundary": func(n *declarations.Need) {
			n.Parameters.Query, n.Parameters.Source = n.Parameters.Query+n.Parameters.Source, ""
		},
	} {
		n := base
		change(&n)
		fp := n.Fingerprint()
		if prev, dup := seen[fp]; dup {
			t.Errorf("%s has the fingerprint of %s", name, prev)
		}
		seen[fp] = name
	}
}

// TestSchemaTags checks the jsonschema tags as invopop/jsonschema reads
// them (split on commas not escaped with a backslash): every part is a
// known key=value, and the source pattern is the rule Validate applies.
func TestSchemaTags(t *testing.T) {
	known := map[string]bool{"description": true, "enum": true, "maxLength": true, "minLength": true, "pattern": true, "type": true}
	var pattern string
	for _, typ := range []reflect.Type{reflect.TypeFor[declarations.Need](), reflect.TypeFor[declarations.Parameters](), reflect.TypeFor[declarations.Justification]()} {
		for f := range typ.Fields() {
			tag, ok := f.Tag.Lookup("jsonschema")
			if !ok || f.Tag.Get("json") == "" {
				t.Errorf("%s.%s: missing json or jsonschema tag", typ.Name(), f.Name)
				continue
			}
			for _, part := range splitUnescaped(tag) {
				k, v, ok := strings.Cut(part, "=")
				if !ok || !known[k] || v == "" {
					t.Errorf("%s.%s: tag part %q", typ.Name(), f.Name, part)
				}
				if k == "pattern" && f.Name == "Source" {
					pattern = v
				}
			}
		}
	}
	if pattern != `^[a-z0-9][a-z0-9_.-]{0,63}$` {
		t.Fatalf("source pattern %q", pattern)
	}
	re := regexp.MustCompile(pattern)
	for _, s := range []string{"a", "db-1.main_2", "_a", "A", "a/b", "é", "a" + strings.Repeat("b", 63), "a" + strings.Repeat("b", 64), "0", "a\n"} {
		if re.MatchString(s) != (declarations.CheckSource(s) == nil) {
			t.Errorf("source %q: pattern and Validate disagree", s)
		}
	}
}

// splitUnescaped is invopop/jsonschema's splitOnUnescapedCommas.
func splitUnescaped(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if n := len(out); n > 0 && strings.HasSuffix(out[n-1], `\`) {
			out[n-1] = strings.TrimSuffix(out[n-1], `\`) + "," + p
			continue
		}
		out = append(out, p)
	}
	return out
}

func TestParseNeed(t *testing.T) {
	base := declarationstest.FetchNeed()
	valid := string(base.Canonical())
	for _, c := range []struct {
		name, in, field string
	}{
		{"valid", valid, "-"},
		{"valid with white space", " \n" + strings.ReplaceAll(valid, ",", " ,\n ") + "\n", "-"},
		{"spaces around colons", strings.ReplaceAll(valid, `":`, "\"\t :\r\n "), "-"},
		{"escaped key", strings.Replace(valid, `"operation"`, `"\u006fperation"`, 1), "-"},
		{"empty", "", ""},
		{"null", "null", ""},
		{"array", "[" + valid + "]", ""},
		{"string", `"comm.fetch"`, ""},
		{"two objects", valid + valid, ""},
		{"trailing garbage", valid + "x", ""},
		{"truncated", valid[:len(valid)-1], ""},
		{"BOM", "\ufeff" + valid, ""},
		{"invalid UTF-8", strings.Replace(valid, "What", "Wh\xffat", 1), ""},
		{"too large", valid + strings.Repeat(" ", declarations.MaxNeedJSONBytes), ""},
		{"duplicate top key", `{"operation":"comm.fetch","operation":"comm.search"}`, ""},
		{"duplicate nested key", strings.Replace(valid, `"url":`, `"url":"https://evil.example/","url":`, 1), ""},
		{"duplicate by escape", strings.Replace(valid, `"url":`, `"url":"https://evil.example/","\u0075rl":`, 1), ""},
		{"case-variant key", strings.Replace(valid, `"url"`, `"URL"`, 1), "parameters"},
		{"case-variant top key", strings.Replace(valid, `"operation"`, `"Operation"`, 1), ""},
		{"unknown key", strings.Replace(valid, `"url"`, `"uri"`, 1), "parameters"},
		{"unknown top key", strings.Replace(valid, `{"operation"`, `{"phase":"execution","operation"`, 1), ""},
		{"unknown justification key", strings.Replace(valid, `"user_request"`, `"user_requests"`, 1), "justification"},
		{"deep", `{"parameters":{"url":` + strings.Repeat(`{"a":`, 40) + `1` + strings.Repeat(`}`, 40) + `}}`, ""},
		{"null parameters", `{"operation":"comm.fetch","parameters":null}`, "parameters"},
		{"array parameters", `{"operation":"comm.fetch","parameters":[]}`, "parameters"},
		{"null url", strings.Replace(valid, `"https://example.com/prices?product=x"`, "null", 1), "parameters.url"},
		{"number url", strings.Replace(valid, `"https://example.com/prices?product=x"`, "1", 1), "parameters.url"},
		{"object operation", strings.Replace(valid, `"comm.fetch"`, "{}", 1), "operation"},
		{"missing justification", `{"operation":"comm.fetch","parameters":{"url":"https://example.com/"}}`, "justification.user_request"},
		{"invalid need", strings.Replace(valid, "https://example.com", "https://user:pw@example.com", 1), "parameters.url"},
		{"escaped NUL", strings.Replace(valid, "What", `Wh\u0000at`, 1), "justification.user_request"},
		{"escaped lone surrogate", strings.Replace(valid, "What", `Wh\ud800at`, 1), "-"},
	} {
		n, err := declarations.ParseNeed([]byte(c.in))
		if c.field == "-" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var fe *declarations.FieldError
		if n != nil || !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, declarations.ErrInvalid) {
			t.Errorf("%s: %v, %v; want a FieldError for %q", c.name, n, err, c.field)
		}
	}
}
