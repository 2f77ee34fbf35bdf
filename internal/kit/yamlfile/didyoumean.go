package yamlfile

import (
	"errors"
	"reflect"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/airlock-dev/airlock/internal/kit/nearest"
)

// didYouMean is the key an unknown-key error probably meant: the allowed
// key nearest to it at the same place (`pool` → "pools", a policy's `dney`
// → "deny"), so a typo is one look away from its fix; "" when none is
// close. The allowed keys are the json names of the struct v decodes that
// mapping into; a place that is not a struct, or a path it cannot follow,
// suggests nothing.
func didYouMean(data []byte, v any, err error) string {
	var unknown *yaml.UnknownFieldError
	if !errors.As(err, &unknown) || unknown.Token == nil || unknown.Token.Position == nil {
		return ""
	}
	path := keyPath(data, unknown.Token.Position.Line, unknown.Token.Position.Column)
	if path == nil {
		return ""
	}
	t := typeAt(reflect.TypeOf(v), path[:len(path)-1])
	if t == nil {
		return ""
	}
	return nearest.Name(unknown.Token.Value, fieldNames(t))
}

// keyPath is the path of the mapping key at line:column, as segments
// (names and indexes), or nil.
func keyPath(data []byte, line, column int) []string {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil
	}
	var found string
	for _, doc := range f.Docs {
		ast.Walk(visitor(func(n ast.Node) {
			mv, ok := n.(*ast.MappingValueNode)
			if !ok || found != "" {
				return
			}
			if p := mv.Key.GetToken().Position; p != nil && p.Line == line && p.Column == column {
				found = mv.Key.GetPath()
			}
		}), doc)
	}
	return splitPath(found)
}

type visitor func(ast.Node)

func (v visitor) Visit(n ast.Node) ast.Visitor { v(n); return v }

// splitPath splits goccy's "$.a.b[0].c" (keys in single quotes when they
// need them) into segments; nil when it cannot.
func splitPath(p string) []string {
	rest, ok := strings.CutPrefix(p, "$")
	if !ok {
		return nil
	}
	var segs []string
	for rest != "" {
		switch rest[0] {
		case '.':
			rest = rest[1:]
			if strings.HasPrefix(rest, "'") {
				end := strings.Index(rest[1:], "'")
				if end < 0 {
					return nil
				}
				segs, rest = append(segs, rest[1:1+end]), rest[2+end:]
				continue
			}
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			segs, rest = append(segs, rest[:end]), rest[end:]
		case '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil
			}
			segs, rest = append(segs, rest[:end+1]), rest[end+1:]
		default:
			return nil
		}
	}
	if len(segs) == 0 {
		return nil
	}
	return segs
}

// typeAt follows path from t: struct fields by their json names, map
// values by any key, slice elements by index. nil where it cannot.
func typeAt(t reflect.Type, path []string) reflect.Type {
	for _, seg := range path {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case strings.HasPrefix(seg, "["):
			if _, err := strconv.Atoi(seg[1 : len(seg)-1]); err != nil || (t.Kind() != reflect.Slice && t.Kind() != reflect.Array) {
				return nil
			}
			t = t.Elem()
		case t.Kind() == reflect.Map:
			t = t.Elem()
		case t.Kind() == reflect.Struct:
			f, ok := fieldByName(t, seg)
			if !ok {
				return nil
			}
			t = f
		default:
			return nil
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	return t
}

// fieldNames are the keys a struct takes (embedded structs' included).
func fieldNames(t reflect.Type) []string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, inline := jsonName(f)
		switch {
		case inline:
			names = append(names, fieldNames(f.Type)...)
		case name != "" && f.IsExported():
			names = append(names, name)
		}
	}
	return names
}

func fieldByName(t reflect.Type, name string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		n, inline := jsonName(f)
		if inline {
			if ft, ok := fieldByName(f.Type, name); ok {
				return ft, true
			}
		} else if n == name && f.IsExported() {
			return f.Type, true
		}
	}
	return nil, false
}

// jsonName is a field's key, or inline for an embedded struct without one.
func jsonName(f reflect.StructField) (name string, inline bool) {
	tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if tag == "-" {
		return "", false
	}
	ft := f.Type
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	if f.Anonymous && tag == "" && ft.Kind() == reflect.Struct {
		return "", true
	}
	if tag == "" {
		tag = f.Name
	}
	return tag, false
}
