package agentdojo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
)

// canary matches the placeholder the export left in results.
var canary = regexp.MustCompile(`\{\{INJECTION:([A-Za-z0-9_]+)\}\}`)

// Injections maps a vector id to the text the agent sees there, before the
// renderer escapes it (YAML-decoded already).
type Injections map[string]string

// BenignInjections is every vector's default, YAML-decoded.
func (s *Suite) BenignInjections() Injections {
	out := Injections{}
	for id, v := range s.InjectionVectors {
		out[id] = YAMLDoubleQuoted(v.Default)
	}
	return out
}

// AttackText is the important_instructions text for an injection task's
// goal, as AgentDojo formats it (before YAML decoding).
func (s *Suite) AttackText(goal string) string {
	user, model := s.AttackTemplate.Defaults["user"], s.AttackTemplate.Defaults["model"]
	if user == "" {
		user = "Emma Johnson"
	}
	if model == "" {
		model = "GPT-4"
	}
	// str.format with these three names; the template has no other braces.
	return strings.NewReplacer("{user}", user, "{model}", model, "{goal}", goal).Replace(s.AttackTemplate.Template)
}

// AttackInjections is what an attack pair puts in the vectors: the attack
// text in every vector the user task sees, the default elsewhere.
func (s *Suite) AttackInjections(u *UserTask, it *InjectionTask) Injections {
	out := s.BenignInjections()
	text := YAMLDoubleQuoted(s.AttackText(it.Goal))
	for _, v := range u.VectorsSeen {
		out[v] = text
	}
	return out
}

// Fill is the result the agent sees for c with the given injections:
// each canary replaced by its vector's text, escaped as the call's
// renderer escapes it. benign uses result_default where the export stored
// one (where plain substitution does not reproduce AgentDojo's own run).
func Fill(c Call, inj Injections, benign bool) (string, error) {
	if benign && c.ResultDefault != nil {
		return *c.ResultDefault, nil
	}
	if !canary.MatchString(c.Result) {
		return c.Result, nil
	}
	var missing error
	text := func(m string) string {
		id := canary.FindStringSubmatch(m)[1]
		t, ok := inj[id]
		if !ok {
			missing = fmt.Errorf("no text for vector %q", id)
		}
		return t
	}
	switch c.Render {
	case "json":
		out := canary.ReplaceAllStringFunc(c.Result, func(m string) string { return pyJSONEscape(text(m)) })
		return out, missing
	case "repr":
		v, err := decodeOrdered(c.ResultValue)
		if err != nil {
			return "", fmt.Errorf("result_value: %w", err)
		}
		v = mapStrings(v, func(s string) string { return canary.ReplaceAllStringFunc(s, text) })
		return pyStr(v), missing
	default: // text, str: the string as is
		out := canary.ReplaceAllStringFunc(c.Result, text)
		return out, missing
	}
}

// YAMLDoubleQuoted decodes s as the inside of a double-quoted YAML scalar,
// as PyYAML reads one: escapes decoded, and literal line breaks folded (the
// white space around a break dropped; one break becomes a space, n > 1
// breaks become n-1 newlines).
func YAMLDoubleQuoted(s string) string {
	var b strings.Builder
	rs := []rune(s)
	wsStart := -1 // where in b the literal white space before a break starts
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == ' ' || r == '\t':
			if wsStart < 0 {
				wsStart = b.Len()
			}
			b.WriteRune(r)
			continue
		case r == '\n' || r == '\r':
			// Drop the white space before the break, count the breaks
			// (white space between them and after them is dropped too).
			str := b.String()
			if wsStart >= 0 {
				str = str[:wsStart]
			}
			b.Reset()
			b.WriteString(str)
			breaks := 0
			for i < len(rs) && (rs[i] == '\n' || rs[i] == '\r' || rs[i] == ' ' || rs[i] == '\t') {
				if rs[i] == '\n' {
					breaks++
				} else if rs[i] == '\r' {
					breaks++
					if i+1 < len(rs) && rs[i+1] == '\n' {
						i++
					}
				}
				i++
			}
			i--
			if breaks == 1 {
				b.WriteByte(' ')
			} else {
				b.WriteString(strings.Repeat("\n", breaks-1))
			}
		case r == '\\' && i+1 < len(rs):
			i++
			e := rs[i]
			if simple, ok := yamlEscapes[e]; ok {
				b.WriteString(simple)
				break
			}
			n := map[rune]int{'x': 2, 'u': 4, 'U': 8}[e]
			if n > 0 && i+n < len(rs) {
				if v, err := strconv.ParseUint(string(rs[i+1:i+1+n]), 16, 32); err == nil {
					b.WriteRune(rune(v))
					i += n
					break
				}
			}
			if e == '\n' { // an escaped line break joins the lines
				for i+1 < len(rs) && (rs[i+1] == ' ' || rs[i+1] == '\t') {
					i++
				}
				break
			}
			b.WriteRune('\\')
			b.WriteRune(e)
		default:
			b.WriteRune(r)
		}
		wsStart = -1
	}
	return b.String()
}

var yamlEscapes = map[rune]string{
	'0': "\x00", 'a': "\a", 'b': "\b", 't': "\t", '\t': "\t", 'n': "\n", 'v': "\v", 'f': "\f",
	'r': "\r", 'e': "\x1b", ' ': " ", '"': "\"", '\\': "\\", '/': "/", 'N': "\u0085",
	'_': "\u00a0", 'L': "\u2028", 'P': "\u2029",
}

// pyJSONEscape is the inside of Python's json.dumps of s (ensure_ascii:
// every non-ASCII character as \uXXXX, surrogate pairs above the BMP).
func pyJSONEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || (r >= 0x7f && r <= 0xffff):
				fmt.Fprintf(&b, `\u%04x`, r)
			case r > 0xffff:
				hi, lo := utf16.EncodeRune(r)
				fmt.Fprintf(&b, `\u%04x\u%04x`, hi, lo)
			default:
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}

// PyJSONDumps is Python's json.dumps(v) with its defaults (ensure_ascii,
// separators ", " and ": ", keys in the order given).
func PyJSONDumps(v any) string {
	var b strings.Builder
	pyJSONDialect.write(&b, v)
	return b.String()
}

// pyDialect is one of Python's two printings of a decoded JSON value,
// json.dumps and str()/repr(): they walk the value alike and differ only
// in the constants' spelling and in how a string is quoted.
type pyDialect struct {
	null, yes, no string
	str           func(string) string
}

var (
	pyJSONDialect = pyDialect{"null", "true", "false", func(s string) string { return `"` + pyJSONEscape(s) + `"` }}
	pyReprDialect = pyDialect{"None", "True", "False", PyStrRepr}
)

func (d pyDialect) write(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString(d.null)
	case bool:
		b.WriteString(map[bool]string{true: d.yes, false: d.no}[v])
	case json.Number:
		b.WriteString(v.String())
	case string:
		b.WriteString(d.str(v))
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteString(", ")
			}
			d.write(b, e)
		}
		b.WriteByte(']')
	case *orderedMap:
		b.WriteByte('{')
		for i, k := range v.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(d.str(k) + ": ")
			d.write(b, v.vals[i])
		}
		b.WriteByte('}')
	}
}

// orderedMap is a JSON object in its file order (Python dicts keep
// insertion order, and str() prints them so).
type orderedMap struct {
	keys []string
	vals []any
}

// decodeOrdered decodes JSON keeping object key order and number text.
func decodeOrdered(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := &orderedMap{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				m.keys = append(m.keys, kt.(string))
				m.vals = append(m.vals, v)
			}
			_, err := dec.Token()
			return m, err
		case '[':
			l := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			_, err := dec.Token()
			return l, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return t, nil
	}
}

// mapStrings applies f to every string value (not keys).
func mapStrings(v any, f func(string) string) any {
	switch v := v.(type) {
	case string:
		return f(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = mapStrings(e, f)
		}
		return out
	case *orderedMap:
		out := &orderedMap{keys: v.keys, vals: make([]any, len(v.vals))}
		for i, e := range v.vals {
			out.vals[i] = mapStrings(e, f)
		}
		return out
	}
	return v
}

// pyStr is Python's str() of a decoded JSON value: a dict or list prints
// its elements with repr(); numbers keep their JSON text (Python's json
// writes floats with repr, so the text is the repr).
func pyStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	var b strings.Builder
	pyReprDialect.write(&b, v)
	return b.String()
}

// PyStrRepr is Python 3's repr() of a str: single quotes unless the text
// has a single quote and no double quote; \\, \n, \r, \t and the quote
// escaped; characters Python does not consider printable as \xNN, \uNNNN
// or \UNNNNNNNN.
func PyStrRepr(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == ' ' || (r < 0x7f && r >= 0x20):
			b.WriteRune(r)
		case !unicode.IsPrint(r):
			switch {
			case r < 0x100:
				fmt.Fprintf(&b, `\x%02x`, r)
			case r < 0x10000:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}
