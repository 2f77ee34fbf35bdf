// Package schemas turns Airlock's Go types into JSON Schemas and holds the
// committed copies of them.
//
// One set of Go types defines both what a user may write in a config file and
// what an agent may send to a tool: [Reflect] is the only generator, so the
// schema an editor validates against, the schema mcp-go advertises and the
// struct the runner decodes into cannot drift apart. The committed files in
// this directory are checked against freshly generated ones by the tests of
// the packages that own the types (run `make schemas` to regenerate).
package schemas

import (
	"embed"
	"encoding/json"
	"fmt"

	"github.com/invopop/jsonschema"
)

//go:embed *.schema.json tools/*.schema.json
var files embed.FS

// Reflect returns the JSON Schema of v's type: references inlined, unknown
// properties refused, fields without omitempty required.
func Reflect(v any) (json.RawMessage, error) {
	r := &jsonschema.Reflector{
		DoNotReference:            true,
		ExpandedStruct:            true,
		AllowAdditionalProperties: false,
	}
	s := r.Reflect(v)
	s.Version = "" // mcp-go and editors accept the default draft; keep files short
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("marshalling schema of %T: %w", v, err)
	}
	return append(out, '\n'), nil
}

// MustReflect is Reflect for package-level declarations of fixed types,
// where a failure is a programming error caught by every test run.
func MustReflect(v any) json.RawMessage {
	out, err := Reflect(v)
	if err != nil {
		panic(err)
	}
	return out
}

// File returns a committed schema file, such as "config.schema.json" or
// "tools/read_pool_file.schema.json".
func File(name string) ([]byte, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("schema %q: %w", name, err)
	}
	return b, nil
}
