package tools

import (
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlock-dev/airlock/internal/config"
	"github.com/airlock-dev/airlock/internal/execution/sandbox"
)

// fuzzPipeline declares one parameter of each type and uses them alone, inside
// other text, twice in one element, beside {out} and a pool, and as an option's
// value: every way a declaration can place an agent's value in argv.
func fuzzPipeline() config.Pipeline {
	return config.Pipeline{
		Name: "p", Stdin: "params_json", AllowTemp: true, Inputs: []string{"sales"},
		Argv: []string{
			"/bin/tool", "{param.s}", "{param.n}", "{param.x}", "{param.b}",
			"--name={param.s}", "{out}/{param.s}.txt", "{param.s}{param.n}{param.s}",
			"{pool.sales}/{param.s}", "{tmp}", "{out}",
		},
		Env:     map[string]string{"MODE": "fixed"},
		Outputs: []string{"r.md"},
		Parameters: map[string]config.Param{
			"s": {Type: "string"},
			"n": {Type: "integer"},
			"x": {Type: "number"},
			"b": {Type: "boolean"},
		},
	}
}

// expandOnce is the reference substitution: one left-to-right pass, a
// token's value never rescanned (a value holding "{out}" stays literal).
func expandOnce(arg string, repl map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(arg); {
		matched := false
		for tok, v := range repl {
			if strings.HasPrefix(arg[i:], tok) {
				b.WriteString(v)
				i += len(tok)
				matched = true
				break
			}
		}
		if !matched {
			b.WriteByte(arg[i])
			i++
		}
	}
	return b.String()
}

// FuzzPipelineParamsStayInTheirElement: for any agent-supplied parameter
// values that pass checkParams, buildSpec yields exactly the declaration's
// argv elements (a value never splits an element nor adds one), each token
// replaced once by exactly the checked value, no value standing alone as an
// argv element reads as an option (leading '-', SECURITY.md "no option
// injection"), no NUL or control byte reaches argv or env, the environment is
// the declaration's whatever the values, {out} and {tmp} stay the sandbox's,
// and stdin's params_json decodes back to exactly the checked values.
func FuzzPipelineParamsStayInTheirElement(f *testing.F) {
	f.Add("north", 3.0, 1.5, true)
	f.Add("a b --evil", 0.0, 0.0, false)
	f.Add("{out}/../x", 1.0, 2.0, true)
	f.Add("{param.n}{pool.sales}{tmp}", 7.0, 1e21, false)
	f.Add("../../etc/passwd", 1e15, 0.1, true)
	f.Add("x\x00y", 1.0, 1.0, true)
	f.Add("=", 1.0, 1.0, true)
	f.Add("héllo\u0085\u2028", 9007199254740993.0, 5e-324, false)
	f.Add("ok", 4.0, 2.5, true)
	f.Fuzz(func(t *testing.T, s string, n, x float64, b bool) {
		// An agent's arguments are decoded JSON: strings are valid UTF-8
		// and no number is NaN or infinite.
		if !utf8.ValidString(s) || math.IsNaN(n) || math.IsInf(n, 0) || math.IsNaN(x) || math.IsInf(x, 0) {
			return
		}
		p := fuzzPipeline()
		params, err := checkParams(p, map[string]any{"s": s, "n": n, "x": x, "b": b})
		if err != nil {
			return
		}
		if len(params) != 4 || params["s"] != s {
			t.Fatalf("checked params %q from %q", params, s)
		}
		pools := []sandbox.Pool{{ID: "sales", Dir: "/srv/host/pools/sales", Files: []string{"a.csv"}}}
		spec, err := buildSpec(p, params, pools)
		if err != nil {
			t.Fatalf("buildSpec: %v", err)
		}
		if len(spec.Argv) != len(p.Argv) {
			t.Fatalf("argv has %d elements, the declaration %d: %q", len(spec.Argv), len(p.Argv), spec.Argv)
		}
		repl := map[string]string{"{out}": sandbox.OutDir, "{tmp}": sandbox.TempDir,
			"{pool.sales}": sandbox.PoolMountDir + "/sales"}
		for name, v := range params {
			repl["{param."+name+"}"] = v
		}
		for i, decl := range p.Argv {
			if want := expandOnce(decl, repl); spec.Argv[i] != want {
				t.Fatalf("argv[%d] = %q, want %q (from %q)", i, spec.Argv[i], want, decl)
			}
			if strings.HasPrefix(decl, "{param.") && strings.HasPrefix(spec.Argv[i], "-") {
				t.Fatalf("argv[%d] = %q: a parameter standing alone reads as an option", i, spec.Argv[i])
			}
			if strings.HasPrefix(decl, "{out}") && !strings.HasPrefix(spec.Argv[i], sandbox.OutDir) {
				t.Fatalf("argv[%d] = %q does not start at %s", i, spec.Argv[i], sandbox.OutDir)
			}
		}
		if spec.Argv[9] != sandbox.TempDir || spec.Argv[10] != sandbox.OutDir {
			t.Fatalf("{tmp} {out} became %q %q", spec.Argv[9], spec.Argv[10])
		}
		for _, a := range append(slices.Clone(spec.Argv), spec.Env...) {
			if strings.ContainsFunc(a, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("control byte reaches the process: %q", a)
			}
		}
		bare, err := buildSpec(p, map[string]string{}, pools)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(spec.Env, bare.Env) {
			t.Fatalf("parameters changed the environment: %q, without them %q", spec.Env, bare.Env)
		}
		if spec.Dir != sandbox.OutDir {
			t.Fatalf("dir %q", spec.Dir)
		}
		var back map[string]string
		if err := json.Unmarshal(spec.Stdin, &back); err != nil || !maps.Equal(back, params) {
			t.Fatalf("stdin %q decodes to %q (%v), want %q", spec.Stdin, back, err, params)
		}
	})
}
