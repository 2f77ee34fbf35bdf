package argschema_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/kit/argschema"
	"github.com/airlock-dev/airlock/internal/kit/violation"
)

// marker is appended to every string value of a fuzzed instance: a refusal
// that names a value echoes it.
const marker = "\u2063zQ8vVALUEmark"

var invalid = violation.New(violation.InvalidArguments, "")

// checkRefusal: err is nil or INVALID_ARGUMENTS, and what the agent sees
// of it holds no value.
func checkRefusal(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var v *violation.Error
	if !errors.As(err, &v) || !errors.Is(err, invalid) {
		t.Fatalf("refusal is not INVALID_ARGUMENTS: %v", err)
	}
	if strings.Contains(v.Public(), marker) {
		t.Fatalf("the refusal echoes a value: %s", v.Public())
	}
}

// decodeJSON is encoding/json with numbers kept as written.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the value")
	}
	return v, nil
}

// marked is v with marker appended to every string value (keys kept);
// ok is false if a key already holds the marker.
func marked(v any) (any, bool) {
	switch x := v.(type) {
	case string:
		return x + marker, true
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			m, ok := marked(e)
			if !ok {
				return nil, false
			}
			out[i] = m
		}
		return out, true
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			m, ok := marked(e)
			if !ok || strings.Contains(k, marker) {
				return nil, false
			}
			out[k] = m
		}
		return out, true
	}
	return v, true
}

// markedJSON re-encodes raw with every string value marked (nil when raw
// is not JSON or a key holds the marker).
func markedJSON(raw []byte) []byte {
	v, err := decodeJSON(raw)
	if err != nil {
		return nil
	}
	m, ok := marked(v)
	if !ok {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

// oracle decides the subset of JSON Schema Airlock's tool schemas use, by
// hand; a keyword it does not know fails the test's setup, so a schema
// change cannot silently leave it behind.
type oracle struct {
	res map[string]*regexp.Regexp
}

var oracleKeywords = []string{"$id", "description", "x-mcp-header", "type", "enum", "properties", "additionalProperties",
	"required", "maxLength", "minLength", "pattern", "minimum", "maximum"}

func (o *oracle) learn(s map[string]any) error {
	for k, v := range s {
		if !slices.Contains(oracleKeywords, k) {
			return fmt.Errorf("keyword %q: teach the oracle", k)
		}
		switch k {
		case "pattern":
			re, err := regexp.Compile(v.(string))
			if err != nil {
				return err
			}
			o.res[v.(string)] = re
		case "properties":
			for _, sub := range v.(map[string]any) {
				if err := o.learn(sub.(map[string]any)); err != nil {
					return err
				}
			}
		case "additionalProperties":
			if b, ok := v.(bool); !ok || b {
				return fmt.Errorf("additionalProperties %v: teach the oracle", v)
			}
		}
	}
	return nil
}

func rat(n json.Number) *big.Rat {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		return nil
	}
	return r
}

// accepts reports whether v satisfies s.
func (o *oracle) accepts(s map[string]any, v any) bool {
	str, isStr := v.(string)
	num, isNum := v.(json.Number)
	obj, isObj := v.(map[string]any)
	if typ, ok := s["type"].(string); ok {
		_, isArr := v.([]any)
		_, isBool := v.(bool)
		r := (*big.Rat)(nil)
		if isNum {
			r = rat(num)
		}
		if !map[string]bool{"string": isStr, "object": isObj, "array": isArr, "boolean": isBool,
			"number": isNum, "integer": isNum && r != nil && r.IsInt()}[typ] {
			return false
		}
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { es, ok := e.(string); return ok && isStr && es == str }) {
		return false
	}
	if isStr {
		n := json.Number(fmt.Sprint(utf8.RuneCountInString(str)))
		if m, ok := s["maxLength"].(json.Number); ok && rat(n).Cmp(rat(m)) > 0 {
			return false
		}
		if m, ok := s["minLength"].(json.Number); ok && rat(n).Cmp(rat(m)) < 0 {
			return false
		}
		if p, ok := s["pattern"].(string); ok && !o.res[p].MatchString(str) {
			return false
		}
	}
	if isNum {
		if m, ok := s["minimum"].(json.Number); ok && (rat(num) == nil || rat(num).Cmp(rat(m)) < 0) {
			return false
		}
		if m, ok := s["maximum"].(json.Number); ok && (rat(num) == nil || rat(num).Cmp(rat(m)) > 0) {
			return false
		}
	}
	if isObj {
		props, _ := s["properties"].(map[string]any)
		for k, e := range obj {
			sub, named := props[k]
			if !named && s["additionalProperties"] == false {
				return false
			}
			if named && !o.accepts(sub.(map[string]any), e) {
				return false
			}
		}
		req, _ := s["required"].([]any)
		for _, r := range req {
			if _, ok := obj[r.(string)]; !ok {
				return false
			}
		}
	}
	return true
}

type toolSchema struct {
	name string
	doc  []byte
	tree map[string]any
	v    *argschema.Validator
}

// toolSchemas are the committed input schemas of Airlock's tools, the
// very documents the runner validates against.
func toolSchemas(f *testing.F, o *oracle) []toolSchema {
	paths, err := filepath.Glob("../../../schemas/tools/*.schema.json")
	if err != nil || len(paths) == 0 {
		f.Fatalf("tool schemas: %v (%d)", err, len(paths))
	}
	var out []toolSchema
	for _, p := range paths {
		doc, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".schema.json")
		v, err := argschema.Compile(name, doc)
		if err != nil {
			f.Fatal(err)
		}
		tree, err := decodeJSON(doc)
		if err != nil {
			f.Fatal(err)
		}
		if err := o.learn(tree.(map[string]any)); err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		out = append(out, toolSchema{name: name, doc: doc, tree: tree.(map[string]any), v: v})
	}
	return out
}

// FuzzValidateToolArgs: whatever arguments an agent sends one of
// Airlock's tools (step 1 of every call), Validate
//   - accepts exactly what the schema advertised to the client allows,
//     as an independent reading of that schema decides (closed objects,
//     required fields, types, lengths in characters, patterns, enums,
//     bounds): what the agent is told and what is accepted cannot drift,
//     and nothing the schema forbids reaches the strict decoder;
//   - accepts only one JSON object (nothing after it);
//   - refuses with INVALID_ARGUMENTS only, and never echoes a value: the
//     same arguments with every string value marked are refused without
//     the mark.
func FuzzValidateToolArgs(f *testing.F) {
	o := &oracle{res: map[string]*regexp.Regexp{}}
	tools := toolSchemas(f, o)
	for _, s := range []string{
		`{"pool":"docs","path":"a/b.txt"}`, `{"pool":"docs","path":"a","offset":1.0,"limit":0}`,
		`{"pool":"","path":"x"}`, `{"pool":"docs","path":"a","offset":-1}`, `{"pool":"docs","path":"a","offset":1e3}`,
		`{"pool":"docs","path":"a","mode":"x"}`, `{"pool":7}`, `{}`, `[]`, `null`, `{"pool":"docs","path":"a"} {}`,
		`{"limit":1000,"offset":2.5}`, `{"pipeline":"p","params":{"k":"v"}}`, `{"pipeline":"` + strings.Repeat("é", 70) + `"}`,
		`{"operation":"comm.fetch","parameters":{"url":"https://example.com/"},"justification":{"user_request":"u","missing_knowledge":"m","expected_use":"e"}}`,
		`{"operation":"comm.mcp","parameters":{"upstream":"mem","tool":"search","arguments":{"q":"x"}},"justification":{"user_request":"u","missing_knowledge":"m","expected_use":"e"}}`,
		`{"operation":"comm.exec","phase":"execution"}`, `{"operation":"comm.query","parameters":{"source":"Bad Name","query":"SELECT 1"}}`,
		`{"pool":"docs","path":"a","pool":"other"}`, `{"pool":"d\u0000","path":"\ud800"}`,
	} {
		for i := range tools {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		tool := tools[int(which)%len(tools)]
		err := tool.v.Validate(raw)
		checkRefusal(t, err)
		inst, derr := decodeJSON(raw)
		if err == nil {
			if _, isObj := inst.(map[string]any); derr != nil || !isObj {
				t.Fatalf("%s accepted %q, not one JSON object (%v)", tool.name, raw, derr)
			}
		}
		if derr == nil {
			if want := o.accepts(tool.tree, inst); want != (err == nil) {
				t.Fatalf("%s: Validate(%q) = %v, but the schema says accepted = %v", tool.name, raw, err, want)
			}
		}
		if m := markedJSON(raw); m != nil {
			checkRefusal(t, tool.v.Validate(m))
		}
	})
}

// FuzzCompileUpstreamSchema: an upstream MCP server's tool lists its own
// input schema, which is pinned and compiled (issue 15), then an agent's
// arguments are checked against it. For any schema and arguments:
// Compile never panics; a schema it compiles never reads outside itself
// (a document it reaches by $ref/$schema/$id, file or URL, changing
// between two compilations changes nothing); Validate refuses with
// INVALID_ARGUMENTS only and never echoes a value.
func FuzzCompileUpstreamSchema(f *testing.F) {
	dir := f.TempDir()
	outside := filepath.Join(dir, "outside.json")
	fileURL := "file://" + outside
	write := func(doc string) {
		if err := os.WriteFile(outside, []byte(doc), 0o600); err != nil {
			f.Fatal(err)
		}
	}
	for _, s := range []struct{ schema, args string }{
		{`{"type":"object","properties":{"q":{"type":"string","maxLength":5}},"required":["q"],"additionalProperties":false}`, `{"q":"hello!"}`},
		{`{"$ref":"` + fileURL + `"}`, `"x"`},
		{`{"$schema":"` + fileURL + `","type":"string"}`, `"x"`},
		{`{"$id":"file://` + dir + `/","$ref":"outside.json"}`, `5`},
		{`{"properties":{"a":{"$ref":"https://schemas.example/evil.json"}}}`, `{"a":1}`},
		{`{"$ref":"#"}`, `{"a":[1,2,{"b":null}]}`},
		{`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, `1`},
		{`{"type":"array","items":{"enum":["a","b"]},"uniqueItems":true}`, `["a","c","a"]`},
		{`{"patternProperties":{"^x-(":{}}}`, `{}`},
		{`{"type":"object","propertyNames":{"pattern":"^[a-z]+$"},"dependentRequired":{"a":["b"]}}`, `{"a":1,"B":2}`},
		{`{"anyOf":[{"type":"integer","multipleOf":0.01},{"const":"k"}],"not":{"minimum":1e308}}`, `1e400`},
		{`{"format":"email","contentEncoding":"base64","minLength":2}`, `"a@"`},
		{`{"unevaluatedProperties":false,"allOf":[{"properties":{"a":true}}]}`, `{"a":1,"b":2}`},
		{`true`, `null`}, {`false`, `{}`}, {`[]`, `{}`}, {`{"type":7}`, `1`}, {`{"$ref":"#/nope"}`, `1`},
	} {
		f.Add([]byte(s.schema), []byte(s.args))
	}
	probes := [][]byte{[]byte(`5`), []byte(`"x"`), []byte(`{}`), []byte(`[1]`), []byte(`null`)}
	f.Fuzz(func(t *testing.T, schema, args []byte) {
		write(`{"type":"integer"}`)
		v, err := argschema.Compile("mcp.fuzz.tool", schema)
		if err != nil {
			return
		}
		checkRefusal(t, v.Validate(args))
		if m := markedJSON(args); m != nil {
			checkRefusal(t, v.Validate(m))
		}
		if !bytes.Contains(schema, []byte("$")) {
			return // no $ref, $schema or $id: nothing to look outside for
		}
		before := make([]bool, len(probes))
		for i, p := range probes {
			before[i] = v.Validate(p) == nil
		}
		write(`{"type":"string"}`)
		again, err := argschema.Compile("mcp.fuzz.tool", schema)
		if err != nil {
			t.Fatalf("compiles, then not after a file outside it changed: %v", err)
		}
		for i, p := range probes {
			if (again.Validate(p) == nil) != before[i] {
				t.Fatalf("the schema's verdict on %s changed with a file outside it: %q", p, schema)
			}
		}
	})
}
